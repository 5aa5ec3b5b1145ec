"""The engine: owns MLX and the generation thread, and runs up to ``parallel`` requests at
once with continuous batching (mlx-lm's ``BatchGenerator``).

Each loop iteration: drop requests whose client left, ask engine/step_plan.py for the
iteration's ``StepPlan`` (whether to wait for a burst, which queued requests start in which
slot and lane, whether the solo sequence joins the batch) and execute it: start the admitted
requests (reusing prompt-cache prefixes), then advance the single-sequence lane and the batch
one step (one decode token for every generating sequence plus one prefill chunk for sequences
still reading their prompt). A failure inside one request ends that request with
``Finished(error)``; the loop itself never stops on a request's fault.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import mlx.core as mx
from mlx_lm.generate import BatchGenerator, generation_stream
from mlx_lm.models.cache import make_prompt_cache

from ..errors import (
    ContextLengthExceeded,
    InvalidRequestError,
    ModelLoading,
    NotSupported,
    ServerError,
)
from ..generation import (
    Finished,
    FinishReason,
    GenerationRequest,
    Priority,
    TokenDelta,
    TokenLogprob,
)
from . import loop_detection
from .adapters import AdapterModels, needs_solo_lane
from .detokenizer import IncrementalDetokenizer
from .engine_config import EngineConfig
from .handle import RequestHandle
from .heap import settle_heap
from .load_hooks import LoadHooks
from .loaded_model import LoadedModel, load_draft_model, load_model
from .logprobs import LogprobRenderer, logprob_row, render_step
from .penalties import build_logits_processors
from .prompt_cache import PromptCache
from .sampling import check_logit_bias
from .scheduler import PrefillQueue, Waiting
from .single_sequence import SingleSequenceRun
from .slots import ActiveSequence, guarded_decoding
from .solo import SoloRun
from .speculative import SpeculativeRun, can_speculate, choose_drafter, drafts
from .stats import EngineStats, RequestMetrics
from .step_plan import (
    IDLE_WAIT_S,
    STEP_RUNNING,
    Admission,
    EngineNow,
    QueuedRequest,
    SoloLane,
    StepPlan,
    plan,
)
from .stops import StopMatcher
from .thread_exit import wait_gone
from .vision import VisionRun, is_vision_checkpoint, load_vision_model

log = logging.getLogger("mlxcel.engine")

__all__ = ["Engine", "EngineConfig", "EngineStats"]

class Engine:
    """Owns the model, the slots and the generation thread."""

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.state = "loading"
        self.load_error: str | None = None
        self.load_exception: Exception | None = None
        self.model: LoadedModel | None = None
        self.draft: LoadedModel | None = None
        self.stats = EngineStats()
        self.metrics = RequestMetrics()
        self.queue = PrefillQueue(config.max_queue or 4 * max(config.parallel, 1))
        self.slots: list[ActiveSequence | None] = [None] * max(config.parallel, 1)
        self.prompt_cache: PromptCache | None = (
            PromptCache(config.cache_bytes, config.cache_entries, config.cache_ttl_s)
            if config.cache_prompt
            else None
        )
        self._by_uid: dict[int, ActiveSequence] = {}
        self.adapters = AdapterModels(config.model)
        self._solo: ActiveSequence | None = None
        self._burst_began: float | None = None  # when this idle engine began a burst wait
        self.solo_moves = 0  # sequences moved from the single-sequence lane into the batch
        self._batch: BatchGenerator | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="mlxcel-engine", daemon=True)
        self._logprobs: LogprobRenderer | None = None
        self.on_fatal: Callable[[], None] | None = None
        # every handle not yet finished, for cancel_all (a bounded shutdown: shutdown.py)
        self._live: weakref.WeakSet[RequestHandle] = weakref.WeakSet()
        self._load_hooks = LoadHooks()  # run on the model once loaded (when_loaded)

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def started(self) -> bool:
        return self._thread.is_alive() or self.state != "loading"

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping = True
        self.queue.wake()
        if self._thread.is_alive():
            self._thread.join(timeout)
            wait_gone(self._thread)  # its MLX thread-locals, gone before an exit: thread_exit.py
        mx.synchronize()  # MLX work in flight at exit aborts (134); the thread drains its own

    def cancel_all(self, reason: str | None = None) -> int:
        """Cancel every request not yet finished (the engine ends each with its final event
        at its next step), saying ``reason`` to their clients; how many there were. Safe
        from any thread."""
        live = [handle for handle in list(self._live) if not handle.finished.is_set()]
        for handle in live:
            handle.cancel(reason)
        return len(live)

    @property
    def unfinished(self) -> int:
        """Requests queued or running."""
        return sum(1 for handle in list(self._live) if not handle.finished.is_set())

    def when_loaded(self, hook: Callable[[LoadedModel], None]) -> None:
        """Run ``hook`` on the model once it has loaded and before any request can use it
        (``--chat-template`` installed for every route), or at once if it already has."""
        self._load_hooks.add(hook, self.model)

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self.state == "loading" and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.state == "ready"

    @property
    def max_batch_size(self) -> int:
        return len(self.slots)

    @property
    def queue_depth(self) -> int:
        return len(self.queue)

    @property
    def max_queue(self) -> int:
        """Requests that may wait for a slot; one more is refused (503)."""
        return self.queue.capacity

    @property
    def active_sequences(self) -> int:
        return sum(seq is not None for seq in self.slots)

    # -- submission (event loop side) ------------------------------------------------------
    def require_model(self) -> LoadedModel:
        if self.model is None or self.state != "ready":
            if self.state == "failed":
                raise ServerError(f"model failed to load: {self.load_error}")
            raise ModelLoading()
        return self.model

    def submit(
        self,
        request: GenerationRequest,
        priority: Priority | None = None,
        *,
        count_in_metrics: bool | None = None,
    ) -> RequestHandle:
        """Queue a request; raises 400 for a prompt that cannot fit a slot, 503 when full."""
        return self.submit_all([request], priority, count_in_metrics=count_in_metrics)[0]

    def submit_all(
        self,
        requests: list[GenerationRequest],
        priority: Priority | None = None,
        *,
        count_in_metrics: bool | None = None,
    ) -> list[RequestHandle]:
        """Queue every request or none: each is checked as ``submit`` checks one, then all
        enter the queue at once (503 when it cannot take them all, leaving nothing queued)."""
        checked = [self._checked(r, priority, count_in_metrics) for r in requests]
        loop = asyncio.get_running_loop()
        handles = [RequestHandle(request, loop, self.config.stream_interval_ms / 1000,
                                 self.config.stream_buffer_bytes,
                                 self.config.stream_stall_timeout_s)
                   for request in checked]
        self._live.update(handles)
        self.queue.push_all(handles)
        return handles

    def _checked(self, request: GenerationRequest, priority: Priority | None,
                 count_in_metrics: bool | None) -> GenerationRequest:
        model = self.require_model()
        changes: dict[str, Any] = {}
        if priority is not None:
            changes["priority"] = priority
        if count_in_metrics is not None:
            changes["count_in_metrics"] = count_in_metrics
        if changes:
            request = dataclasses.replace(request, **changes)
        n_prompt = len(request.prompt_tokens)
        if n_prompt == 0:
            raise InvalidRequestError("The prompt is empty.", param="prompt")
        check_logit_bias(request.sampling, model.vocab_size)
        if request.adapter is not None and self.config.solo_only:
            raise NotSupported("LoRA adapters are not served under sharded serving.",
                               param="adapters")
        if n_prompt >= model.context_size:
            raise ContextLengthExceeded(
                f"request ({n_prompt} tokens) exceeds the available context size "
                f"({model.context_size} tokens), try increasing it",
                n_prompt_tokens=n_prompt, n_ctx=model.context_size,
            )
        return request

    # -- engine thread ---------------------------------------------------------------------
    def _run(self) -> None:
        """Plan each iteration (engine/step_plan.py), then execute the plan."""
        if not self._load():
            return
        while not self._stopping:
            self._reap_cancelled()
            waiting = self.queue.waiting()
            # An empty queue plans only the steps: its snapshots would cost every token.
            step = plan(self._queued(waiting), self._free_slots(), self._engine_now()) \
                if waiting or self._idle else STEP_RUNNING
            if step.burst_wait_s:
                if self._burst_began is None:
                    self._burst_began = time.monotonic()
                self.queue.wait_for_arrival(step.burst_wait_s)
                continue
            self._burst_began = None
            self._admit(step, [item.handle for item in waiting])
            if self._idle:
                self.queue.wait(IDLE_WAIT_S)
                continue
            if step.step_solo and self._solo is not None:
                self._solo_step(self._solo)
            if step.step_batch and self._by_uid:
                self._step()
        for seq in self._running():
            self._finish(seq, "cancelled")
        mx.synchronize(generation_stream)  # this thread's own streams: see stop()

    @property
    def _idle(self) -> bool:
        """Nothing decoding: neither the batch nor the single-sequence lane holds a request."""
        return self._solo is None and not self._by_uid

    def _load(self) -> bool:
        try:
            if is_vision_checkpoint(self.config.model):
                self.model = load_vision_model(self.config.model, ctx_size=self.config.
                                               slot_ctx_size, policy=self.config.media)
            else:
                self.model = load_model(self.config.model, ctx_size=self.config.slot_ctx_size)
                if self.config.draft_model:
                    self.draft = load_draft_model(self.config.draft_model, self.model)
            self._load_hooks.run(self.model)
            self._logprobs = LogprobRenderer(self.model.tokenizer)
            # A VLM runs unbatched (engine/vision.py): no BatchGenerator over it.
            self._batch = self._new_batch() if self.model.vision is None else None
            settle_heap()
            self.state = "ready"
            log.info("model %s loaded (%d slots, context %d per slot)",
                     self.model.name, len(self.slots), self.model.context_size)
            return True
        except Exception as exc:  # noqa: BLE001 - any load failure is reported, not raised
            self.state = "failed"
            self.load_error = f"{type(exc).__name__}: {exc}"
            self.load_exception = exc
            # mlxcel-server reports it in one line (startup.py); the traceback is for debugging
            log.debug("model failed to load", exc_info=True)
            if self.on_fatal is not None:
                self.on_fatal()
            return False

    def _new_batch(self) -> BatchGenerator:
        assert self.model is not None
        n = len(self.slots)
        return BatchGenerator(
            self.model.model,
            completion_batch_size=n,
            prefill_batch_size=n,
            prefill_step_size=self.config.prefill_step_size,
        )

    def _reap_cancelled(self) -> None:
        for handle in self.queue.drop_cancelled():
            handle.emit(Finished("cancelled", len(handle.request.prompt_tokens), 0))
        for seq in self._running():
            if seq.handle.cancelled:
                self._finish(seq, "cancelled")

    # -- planning snapshots ----------------------------------------------------------------
    def _queued(self, waiting: list[Waiting]) -> list[QueuedRequest]:
        """The queue as the plan reads it (``key``: the index in ``waiting``)."""
        now = time.monotonic()
        # Whether a request would draft is asked only when it could start: building its
        # processors to find out is not free.
        startable = any(seq is None for seq in self.slots)
        return [QueuedRequest(key, item.rank, item.order, now - item.arrived,
                              adapter=needs_solo_lane(item.handle),
                              speculative=startable and self._drafts(item.handle.request))
                for key, item in enumerate(waiting)]

    def _drafts(self, request: GenerationRequest) -> bool:
        configured = self.draft is not None or self.config.prompt_lookup
        if not configured or not request.sampling.speculative:
            return False
        try:
            processors = bool(request.logits_processor_factories) or bool(
                build_logits_processors(request.sampling))
        except Exception:  # noqa: BLE001 - it fails again, as this request's error, in _start
            return False
        return drafts(request.sampling, processors, configured, self.config.draft_max)

    def _free_slots(self) -> list[int]:
        return [slot for slot, occupant in enumerate(self.slots) if occupant is None]

    def _engine_now(self) -> EngineNow:
        seq = self._solo
        lane: SoloLane = "free"
        if seq is not None:
            movable = isinstance(seq.solo, SoloRun) and seq.solo.movable and self._batch is not None
            lane = "movable" if movable else "fixed"
        began = self._burst_began
        return EngineNow(batch_size=len(self._by_uid), solo=lane,
                         vision_model=self.model is not None and self.model.vision is not None,
                         solo_only=self.config.solo_only,
                         burst_waited_s=0.0 if began is None else time.monotonic() - began)

    # -- executing a plan ------------------------------------------------------------------
    def _admit(self, step: StepPlan, handles: list[RequestHandle]) -> None:
        moved = False
        for admission in step.admissions:
            if admission.lane != "batch" and self._solo is not None:
                return  # the solo sequence declined to move after all: plan again next time
            if admission.lane == "batch" and step.move_solo and not moved:
                self._move_solo_to_batch()
                moved = True
            handle = handles[admission.key]
            if not self.queue.take(handle):
                continue
            try:
                self._start(admission, handle)
            except Exception as exc:  # noqa: BLE001 - this request fails, the loop goes on
                log.exception("could not start request %s", handle.request.request_id)
                n = len(handle.request.prompt_tokens)
                handle.emit(Finished("error", n, 0, error=type(exc).__name__))

    def _start(self, admission: Admission, handle: RequestHandle) -> None:
        """Execute one admission: the request's sequence in its slot, on its planned lane."""
        assert self.model is not None
        model, request = self.model, handle.request
        prompt = request.prompt_tokens
        max_tokens = min(request.max_tokens, model.context_size - len(prompt))
        if max_tokens <= 0:
            handle.emit(Finished("length", len(prompt), 0))
            return
        cached, cache = 0, None
        if self._caches(request):
            cached, cache = self.prompt_cache.lookup(prompt)  # type: ignore[union-attr]
        seq = ActiveSequence(
            slot=admission.slot,
            uid=-1,
            handle=handle,
            detok=IncrementalDetokenizer(model),
            stops=StopMatcher(request.stop),
            loop=loop_detection.resolve(request.sampling.loop_detection, model.config),
            eos=set() if request.ignore_eos else model.eos_token_ids,
            max_tokens=max_tokens,
            cached_tokens=cached,
        )
        seq.report_progress(cached)  # llama-server's first progress: the cached part only
        sampler, rewind, processors = guarded_decoding(seq, model.vocab_size)
        if admission.lane == "vision":
            seq.solo = VisionRun(model.model, list(prompt), request.vision, sampler, processors,
                                 max_tokens, self.config.prefill_step_size)
            self._solo = seq
        elif admission.lane == "solo":
            seq.solo = self._solo_run(seq, admission.speculate, cache, sampler, rewind, processors)
            self._solo = seq
        else:
            self._join_batch(seq, cache, sampler, processors)
        self.slots[admission.slot] = seq
        fresh = len(prompt) - cached
        self.stats.sequences_started += 1
        self.stats.total_prefill_tokens += fresh
        self.stats.prefill_chunks_processed += -(-fresh // self.config.prefill_step_size)
        self.stats.active_sequences = self.active_sequences

    def _solo_run(self, seq: ActiveSequence, speculate: bool, cache: Any, sampler: Any,
                  rewind: Any, processors: list[Any]) -> SingleSequenceRun:
        """The runner of a sequence starting on the single-sequence lane: speculative when
        the plan says so and its cache can be rewound, else ``generate_step``."""
        assert self.model is not None
        request, cached = seq.handle.request, seq.cached_tokens
        prompt = request.prompt_tokens
        weights = self.adapters.get(request.adapter) if request.adapter else self.model.model
        solo_cache = cache or make_prompt_cache(weights)
        drafter = choose_drafter(
            request.sampling, bool(processors), self.draft.model if self.draft else None,
            self.config.prompt_lookup, self.config.draft_max, self.config.prefill_step_size,
        ) if speculate else None
        if drafter is not None and can_speculate(solo_cache):
            return SpeculativeRun(
                weights, list(prompt[cached:]), solo_cache, list(prompt[:cached]),
                sampler, drafter[0], drafter[1], seq.max_tokens, self.config.prefill_step_size)
        return SoloRun(
            weights, list(prompt[cached:]), solo_cache, list(prompt[:cached]),
            sampler, processors, seq.max_tokens, self.config.prefill_step_size,
            rewind=None if self.config.solo_only or request.adapter is not None else rewind,
            on_progress=(lambda done, _: seq.report_progress(cached + done))
            if request.report_progress else None,
        )

    def _join_batch(self, seq: ActiveSequence, cache: Any, sampler: Any,
                    processors: list[Any]) -> None:
        assert self._batch is not None
        prompt, cached = seq.handle.request.prompt_tokens, seq.cached_tokens
        (seq.uid,) = self._batch.insert(
            [list(prompt[cached:])],
            max_tokens=[seq.max_tokens],
            caches=[cache] if cache is not None else None,
            all_tokens=[list(prompt[:cached])],
            samplers=[sampler],
            logits_processors=[processors],
        )
        self._by_uid[seq.uid] = seq

    def _move_solo_to_batch(self) -> None:
        """A plain sequence on the single-sequence lane joins the batch that a new request is
        about to start, so each step is one forward pass rather than two (engine/solo.py)."""
        seq = self._solo
        if seq is None or not isinstance(seq.solo, SoloRun) or self._batch is None:
            return
        handover = seq.solo.handover()
        if handover is None:
            return
        tokens, cache, held = handover
        (seq.uid,) = self._batch.insert(
            [tokens], max_tokens=[seq.max_tokens - len(seq.generated)], caches=[cache],
            all_tokens=[held], samplers=[seq.solo.sampler], logits_processors=[[]],
        )
        seq.solo = None
        self._solo = None
        self._by_uid[seq.uid] = seq
        self.solo_moves += 1

    def _caches(self, request: GenerationRequest) -> bool:
        """Whether ``request`` reads and feeds the prompt cache: never on a VLM (image
        placeholder ids are the same whatever the image), nor with an adapter (the cache holds
        the base model's keys and values)."""
        return (self.prompt_cache is not None and request.sampling.cache_prompt is not False
                and request.adapter is None
                and self.model is not None and self.model.vision is None)

    def _running(self) -> list[ActiveSequence]:
        solo = [self._solo] if self._solo is not None else []
        return solo + list(self._by_uid.values())

    def _solo_step(self, seq: ActiveSequence) -> None:
        assert seq.solo is not None  # the lane's sequence has its runner
        try:
            response = seq.solo.next()
        except StopIteration:
            self._finish(seq, "length")
            return
        except Exception as exc:  # noqa: BLE001 - this request fails, the loop goes on
            log.exception("generation failed for request %s", seq.handle.request.request_id)
            self._finish(seq, "error", error=type(exc).__name__)
            return
        self.stats.decode_steps_processed += 1
        self._on_token(seq, response)

    def _step(self) -> None:
        assert self._batch is not None
        try:
            prompt_responses, responses = self._batch.next()
        except Exception as exc:  # noqa: BLE001 - the batch is lost, the loop is not
            log.exception("batch step failed; ending the %d running requests", len(self._by_uid))
            for seq in list(self._by_uid.values()):
                self._finish(seq, "error", error=type(exc).__name__, removed=True)
            self._batch = self._new_batch()
            return
        for chunk in prompt_responses:  # one prefill chunk read (mlx-lm's BatchGenerator)
            reading = self._by_uid.get(chunk.uid)
            if reading is not None and isinstance(chunk.progress, tuple):
                reading.report_progress(reading.cached_tokens + chunk.progress[0])
        if responses:
            self.stats.decode_steps_processed += 1
        pairs = [(running, response) for response in responses
                 if (running := self._by_uid.get(response.uid)) is not None]
        rendered = render_step(self._logprobs, [(seq.handle.request, response)
                                                for seq, response in pairs])
        for (running, response), logprob in zip(pairs, rendered, strict=True):
            self._on_token(running, response, logprob)

    def _on_token(self, seq: ActiveSequence, response: Any,
                  rendered: TokenLogprob | None = None) -> None:
        """One sampled token of ``seq``; ``rendered`` is its logprobs when the batch step
        rendered them already."""
        removed = response.finish_reason is not None
        cache = (response.prompt_cache, response.all_tokens) if removed else None
        if seq.guard.error is not None:
            self._finish(seq, "error", error=seq.guard.error, removed=removed)
            return
        if seq.handle.cancelled:
            self._finish(seq, "cancelled", removed=removed, cache=cache)
            return
        token = int(response.token)
        request = seq.handle.request
        if seq.first_token_at is None:
            seq.first_token_at = time.monotonic()
            seq.report_progress(seq.prompt_len)  # whichever lane read it: all of it now
        seq.generated.append(token)
        self.stats.total_decode_tokens += 1
        if token in seq.eos:
            self._finish(seq, "stop", removed=removed, cache=cache)
            return
        logprobs: tuple[TokenLogprob, ...] = ()
        if rendered is not None:
            logprobs = (rendered,)
        elif request.logprobs and self._logprobs is not None:
            logprobs = (self._logprobs.render(logprob_row(request, response), token,
                                              request.top_logprobs),)
        text = seq.stops.feed(seq.detok.add(token))
        if text or logprobs:
            seq.handle.emit(TokenDelta(text, (token,), logprobs))
        if seq.stops.matched is not None or seq.looping():
            self._finish(seq, "stop", removed=removed, cache=cache)
        elif removed:
            self._finish(seq, "length", removed=True, cache=cache)

    def _finish(
        self,
        seq: ActiveSequence,
        reason: FinishReason,
        *,
        error: str | None = None,
        removed: bool = False,
        cache: tuple[Any, Any] | None = None,
    ) -> None:
        request = seq.handle.request
        draft = seq.solo.draft_stats if seq.solo is not None else None
        donate = self._caches(request) and reason != "error"
        if seq.solo is not None:
            if cache is None and donate:
                cache = (seq.solo.cache, seq.solo.held_tokens())
            seq.solo.close()
            self._solo = None
        elif not removed and self._batch is not None:
            extracted = self._batch.remove([seq.uid], return_prompt_caches=donate)
            cache = extracted.get(seq.uid)
        if donate and cache is not None and self.prompt_cache is not None:
            self.prompt_cache.insert(list(cache[1]), cache[0])
        if reason in ("stop", "length"):
            tail = seq.stops.feed(seq.detok.flush()) + seq.stops.flush()
            if tail:
                seq.handle.emit(TokenDelta(tail))
        now = time.monotonic()
        first = seq.first_token_at or now
        finished = Finished(
            reason, seq.prompt_len, len(seq.generated), error=error,
            stop_string=seq.stops.matched, cached_tokens=seq.cached_tokens, draft=draft,
            prompt_ms=(first - seq.started) * 1e3, predicted_ms=(now - first) * 1e3,
        )
        elapsed = now - seq.started
        self.metrics.record(request, finished, elapsed)
        log.info(
            "request %s finished: %s, prompt %d (cached %d), completion %d, %.3f s, priority %s%s",
            request.request_id or "-", reason, seq.prompt_len, seq.cached_tokens,
            len(seq.generated), elapsed, request.priority, f", error {error}" if error else "",
        )
        self.stats.sequences_completed += 1
        self.slots[seq.slot] = None
        self._by_uid.pop(seq.uid, None)
        self.stats.active_sequences = self.active_sequences
        # The slot is free before the client hears the end, so /health never lags behind it.
        seq.handle.emit(finished)
