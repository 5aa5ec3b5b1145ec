"""The single-sequence fast path: a request that arrives at an idle engine decodes with
mlx-lm's ``generate_step`` (one ``KVCache``, no batch bookkeeping), which on MLX's CPU backend is
several times faster per token than a batch of one. Requests that arrive meanwhile go to the
batch, and a plain solo sequence (no logits processors, a sampler that can undo one draw) moves
into the batch with them (``handover``), so a step is one forward pass over every sequence
rather than a batch pass plus a solo pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.generate import generate_step
from mlx_lm.models.cache import can_trim_prompt_cache, trim_prompt_cache

from ..generation import DraftStats


@dataclass
class SoloResponse:
    """Shaped like a ``BatchGenerator`` response, so one code path handles both."""

    token: int
    logprobs: mx.array
    finish_reason: str | None
    prompt_cache: list[Any] | None
    all_tokens: list[int] | None


class SoloRun:
    """A request decoding alone through ``generate_step``, until it ends or moves into the
    batch (a ``SingleSequenceRun``, engine/single_sequence.py)."""

    draft_stats: DraftStats | None = None  # it drafts nothing

    def __init__(
        self,
        model: nn.Module,
        prompt: list[int],
        cache: list[Any],
        context: list[int],
        sampler: Any,
        processors: list[Any],
        max_tokens: int,
        prefill_step_size: int,
        rewind: Callable[[], None] | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.cache = cache
        self.tokens = list(context) + list(prompt)  # what the cache will hold, in order
        self.context_len = len(context)
        self.sampler = sampler
        # Whether the sequence may move into the batch: no processors (they saw the step that
        # the move drops) and a ``rewind`` that undoes the sampler's last draw (None: it stays).
        self.movable = rewind is not None and not processors
        self._rewind = rewind
        self.max_tokens = max_tokens
        self.count = 0
        self._steps: Iterator[tuple[Any, mx.array]] = generate_step(
            mx.array(prompt), model, max_tokens=max_tokens, sampler=sampler,
            logits_processors=processors or None, prompt_cache=cache,
            prefill_step_size=prefill_step_size, prompt_progress_callback=on_progress,
        )

    def next(self) -> SoloResponse:
        token, logprobs = next(self._steps)
        self.count += 1
        self.tokens.append(int(token))
        done = self.count >= self.max_tokens
        return SoloResponse(int(token), logprobs, "length" if done else None,
                            self.cache if done else None, self.held_tokens() if done else None)

    def held_tokens(self) -> list[int]:
        """The token ids whose keys and values the cache holds (generate_step feeds each
        yielded token before yielding it, except possibly the very last)."""
        offset = int(getattr(self.cache[0], "offset", 0)) if self.cache else 0
        return self.tokens[:offset]

    def handover(self) -> tuple[list[int], list[Any], list[int]] | None:
        """Stop here and give the sequence to the batch: ``(tokens to feed, cache, tokens the
        cache holds)``, or None when it must stay. ``generate_step`` has already fed the last
        yielded token and sampled the next one; that step is dropped (the cache is trimmed by
        one and the sampler's draw undone), so the batch feeds the last token again and
        samples exactly what this run would have."""
        if not self.movable:
            return None
        keep = self.context_len if self.count == 0 else len(self.tokens) - 1
        offset = int(getattr(self.cache[0], "offset", keep)) if self.cache else keep
        excess = offset - keep
        if excess < 0 or (excess and not can_trim_prompt_cache(self.cache)):
            return None
        if excess:
            trim_prompt_cache(self.cache, excess)
        if self.count and self._rewind is not None:
            self._rewind()
        self.close()
        return self.tokens[keep:], self.cache, self.tokens[:keep]

    def close(self) -> None:
        close = getattr(self._steps, "close", None)
        if close is not None:
            close()
