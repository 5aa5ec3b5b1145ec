"""One running sequence in a slot: its request, the text pipeline (detokenizer, stop strings,
loop detection), the per-sequence error guard around user-supplied processors, and its
sampler and processors built behind that guard (``guarded_decoding``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx

from ..generation import LoopDetection, PromptProgress
from .detokenizer import IncrementalDetokenizer
from .handle import RequestHandle
from .loop_detection import tail_loops
from .penalties import build_logits_processors
from .sampling import RequestSampler, build_sampler, greedy_sampler
from .single_sequence import SingleSequenceRun
from .stops import StopMatcher


class SequenceGuard:
    """Catches a failure inside one sequence's processors or sampler so that only that
    sequence ends with an error; the batch keeps running for everyone else."""

    def __init__(self) -> None:
        self.error: str | None = None

    def processor(
        self, inner: Callable[[mx.array, mx.array], mx.array]
    ) -> Callable[..., Any]:
        """``inner`` behind the guard. Nothing is evaluated here: a processor's Python code
        (a grammar's matcher) and MLX's shape checks fail when it is called, and a result of
        another shape than the logits it was given is refused here, before the batch stacks
        the rows; what could fail only when evaluated fails at the batch's own evaluation,
        once per step, rather than each processor forcing the step's forward pass early."""

        def guarded(tokens: mx.array, logits: mx.array) -> mx.array:
            if self.error is not None:
                return logits
            try:
                out = inner(tokens, logits)
                if not isinstance(out, mx.array) or out.shape != logits.shape:
                    raise TypeError(f"a logits processor returned {type(out).__name__} "
                                    f"{getattr(out, 'shape', '')} for logits {logits.shape}")
                return out
            except Exception as exc:  # noqa: BLE001 - recorded, reported as this request's error
                self.error = type(exc).__name__
                return logits

        return guarded

    def sampler(self, inner: Callable[[mx.array], mx.array]) -> Callable[[mx.array], mx.array]:
        def guarded(logprobs: mx.array) -> mx.array:
            if self.error is None:
                try:
                    return inner(logprobs)
                except Exception as exc:  # noqa: BLE001 - recorded as this request's error
                    self.error = type(exc).__name__
            return mx.argmax(logprobs, axis=-1)

        return guarded


@dataclass
class ActiveSequence:
    """A request that holds a slot."""

    slot: int
    uid: int
    handle: RequestHandle
    detok: IncrementalDetokenizer
    stops: StopMatcher
    loop: LoopDetection
    eos: set[int]
    max_tokens: int
    cached_tokens: int = 0
    guard: SequenceGuard = field(default_factory=SequenceGuard)
    generated: list[int] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)
    first_token_at: float | None = None
    # Its runner when the sequence decodes on the single-sequence lane.
    solo: SingleSequenceRun | None = None
    # The last prompt progress sent (requests with report_progress only).
    progress_sent: int = -1

    @property
    def prompt_len(self) -> int:
        return len(self.handle.request.prompt_tokens)

    def report_progress(self, processed: int) -> None:
        """Tell the request that ``processed`` prompt tokens are in the cache, if it asked
        (once per value, never backwards)."""
        processed = min(processed, self.prompt_len)
        if not self.handle.request.report_progress or processed <= self.progress_sent:
            return
        self.progress_sent = processed
        self.handle.emit(PromptProgress(self.prompt_len, self.cached_tokens, processed))

    def looping(self) -> bool:
        return tail_loops(self.generated, self.loop)


def _draws_nothing() -> None:
    """The rewind of a sampler without state (argmax)."""


def guarded_decoding(seq: ActiveSequence, vocab_size: int) -> tuple[Any, Any, list[Any]]:
    """The request's sampler, what undoes its last draw, and its logits processors, each
    behind the sequence's guard."""
    request = seq.handle.request
    sampler = build_sampler(request.sampling, vocab_size)
    # What undoes the sampler's last draw, where the solo lane may hand the sequence to the
    # batch: argmax draws nothing; other samplers without a rewind cannot move.
    rewind = (sampler.rewind if isinstance(sampler, RequestSampler)
              else _draws_nothing if sampler is greedy_sampler else None)
    if sampler is not greedy_sampler:  # argmax cannot fail; anything else is guarded
        sampler = seq.guard.sampler(sampler)
    builtin = build_logits_processors(request.sampling)
    processors: list[Any] = [seq.guard.processor(p) for p in builtin]
    processors += [seq.guard.processor(make()) for make in request.logits_processor_factories]
    return sampler, rewind, processors
