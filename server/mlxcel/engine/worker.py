"""The generation thread: takes queued requests and runs them on the model, off the event loop.

One thread owns MLX. A failure inside one request becomes that request's ``Finished(error)``;
the loop itself never stops on a request's fault.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import mlx.core as mx
from mlx_lm.generate import generate_step

from ..errors import ContextLengthExceeded, InvalidRequestError, ModelLoading, ServerError
from .detokenizer import IncrementalDetokenizer
from .handle import RequestHandle
from .logprobs import LogprobRenderer
from .model import LoadedModel, load_model
from .request import Finished, FinishReason, GenerationRequest, TokenDelta, TokenLogprob
from .sampling import build_logits_processors, build_sampler
from .stops import StopMatcher

log = logging.getLogger("mlxcel.engine")


@dataclass
class EngineStats:
    """Cumulative counters reported by /health."""

    sequences_started: int = 0
    sequences_completed: int = 0
    total_prefill_tokens: int = 0
    total_decode_tokens: int = 0
    decode_steps_processed: int = 0
    prefill_chunks_processed: int = 0
    active_sequences: int = 0


@dataclass
class EngineConfig:
    model: str
    ctx_size: int = 0
    prefill_step_size: int = 512
    max_queue: int = 64


@dataclass
class _Job:
    handle: RequestHandle
    enqueued: float = field(default_factory=time.monotonic)


class Engine:
    """Owns the model and the generation thread."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.state = "loading"
        self.load_error: str | None = None
        self.model: LoadedModel | None = None
        self.stats = EngineStats()
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="mlxcel-engine", daemon=True)
        self._logprobs: LogprobRenderer | None = None
        self.on_fatal: Callable[[], None] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self._thread.is_alive() or self.state != "loading"

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._jobs.put(None)
        self._thread.join(timeout)

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.state == "loading" and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.state == "ready"

    @property
    def max_batch_size(self) -> int:
        # One sequence at a time until the batching scheduler lands.
        return 1

    @property
    def queue_depth(self) -> int:
        return self._jobs.qsize()

    # -- submission (event loop side) ------------------------------------------------------
    def require_model(self) -> LoadedModel:
        if self.model is None or self.state != "ready":
            if self.state == "failed":
                raise ServerError(f"model failed to load: {self.load_error}")
            raise ModelLoading()
        return self.model

    def submit(self, request: GenerationRequest) -> RequestHandle:
        model = self.require_model()
        n_prompt = len(request.prompt_tokens)
        if n_prompt == 0:
            raise InvalidRequestError("The prompt is empty.", param="prompt")
        if n_prompt >= model.context_size:
            raise ContextLengthExceeded(
                f"the request exceeds the available context size: {n_prompt} prompt tokens, "
                f"context size {model.context_size}"
            )
        handle = RequestHandle(request, asyncio.get_running_loop())
        self._jobs.put(_Job(handle))
        return handle

    # -- engine thread ---------------------------------------------------------------------
    def _run(self) -> None:
        try:
            self.model = load_model(self.config.model, ctx_size=self.config.ctx_size)
            self._logprobs = LogprobRenderer(self.model.tokenizer)
            self.state = "ready"
            log.info("model %s loaded (context %d)", self.model.name, self.model.context_size)
        except Exception as exc:  # noqa: BLE001 - any load failure is reported, not raised
            self.state = "failed"
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.exception("model failed to load")
            if self.on_fatal is not None:
                self.on_fatal()
            return
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._serve(job.handle)

    def _serve(self, handle: RequestHandle) -> None:
        request = handle.request
        if handle.cancelled:
            handle.emit(Finished("cancelled", len(request.prompt_tokens), 0))
            return
        self.stats.sequences_started += 1
        self.stats.active_sequences = 1
        try:
            self._generate(handle)
        except Exception as exc:  # noqa: BLE001 - one request's fault never stops the loop
            log.exception("generation failed for request %s", request.request_id)
            handle.emit(
                Finished("error", len(request.prompt_tokens), 0, error=f"{type(exc).__name__}")
            )
        finally:
            self.stats.active_sequences = 0
            self.stats.sequences_completed += 1

    def _generate(self, handle: RequestHandle) -> None:
        assert self.model is not None and self._logprobs is not None
        model, request = self.model, handle.request
        n_prompt = len(request.prompt_tokens)
        max_tokens = max(0, min(request.max_tokens, model.context_size - n_prompt))
        if request.sampling.seed is not None:
            # MLX takes an unsigned 64-bit seed; OpenAI allows any int64 (negative ones too)
            mx.random.seed(request.sampling.seed % 2**64)
        steps = generate_step(
            mx.array(request.prompt_tokens),
            model.model,
            max_tokens=max_tokens,
            sampler=build_sampler(request.sampling, model.vocab_size),
            logits_processors=build_logits_processors(request.sampling)
            + [make() for make in request.logits_processor_factories],
            prefill_step_size=self.config.prefill_step_size,
        )
        self.stats.total_prefill_tokens += n_prompt
        self.stats.prefill_chunks_processed += -(-n_prompt // self.config.prefill_step_size)
        detok = IncrementalDetokenizer(model.tokenizer)
        stops = StopMatcher(request.stop)
        eos = set() if request.ignore_eos else model.eos_token_ids
        generated = 0
        reason: FinishReason = "length"
        for token, logprobs in steps if max_tokens > 0 else ():
            if handle.cancelled:
                reason = "cancelled"
                break
            token_id = int(token)
            generated += 1
            self.stats.total_decode_tokens += 1
            self.stats.decode_steps_processed += 1
            lp = self._render_logprobs(request, logprobs, token_id)
            if token_id in eos:
                reason = "stop"
                break
            text = stops.feed(detok.add(token_id))
            if text or lp:
                handle.emit(TokenDelta(text, (token_id,), lp))
            if stops.matched is not None:
                reason = "stop"
                break
        if reason != "cancelled":
            tail = stops.feed(detok.flush()) + stops.flush()
            if tail:
                handle.emit(TokenDelta(tail))
        handle.emit(Finished(reason, n_prompt, generated, stop_string=stops.matched))

    def _render_logprobs(
        self, request: GenerationRequest, logprobs: mx.array, token_id: int
    ) -> tuple[TokenLogprob, ...]:
        if not request.logprobs or self._logprobs is None:
            return ()
        return (self._logprobs.render(logprobs, token_id, request.top_logprobs),)
