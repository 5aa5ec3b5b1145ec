"""The bridge between the engine thread and one request's asyncio consumer.

Events are appended to a buffer on the engine thread; the event loop is woken only when no
wake-up is already pending, and the consumer takes everything buffered at once. A consumer
that falls behind therefore costs one wake-up (and, for a stream, one socket write) per batch
of tokens instead of one per token, and the engine thread never waits on the loop.

The wake-ups themselves are shared: every handle of one event loop goes through that loop's
``LoopWaker``, so the tokens a batched step hands to many requests cost one
``call_soon_threadsafe`` (a write to the loop's self-pipe) rather than one per request.

And they are paced: after waking the loop for a request, the engine lets that request's next
tokens gather for ``interval_s`` (``--stream-interval-ms``) before waking it again, so a fast
stream costs the event loop one wake-up, one pass through the encoder and one socket write per
interval rather than per token (the first token and the end always go at once). vLLM's
``--stream-interval`` does the same by token count.

And they are bounded (backpressure): a client that stops reading blocks its route's socket
write (uvicorn pauses the writer above its transport's high-water mark), so the route stops
taking batches and the engine's events pile up here. The engine thread must never wait on one
client, so the handle does not block it either: once the unread events are estimated to encode
to more than ``buffer_bytes`` (``--stream-buffer-bytes``), or have waited unread for
``stall_timeout_s`` (``--stream-stall-timeout``), the handle cancels its request, which the
engine stops at its next step (a ``Finished("cancelled")``, as for a client that left). What
one stream can hold is thus about twice ``buffer_bytes``: the unread buffer and the batch its
route is writing. docs/limits.md says so for users.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import weakref
from collections.abc import AsyncIterator

from ..generation import EngineEvent, Finished, GenerationRequest, PromptProgress, TokenDelta

log = logging.getLogger("mlxcel.engine")

# What one event costs once encoded, estimated without encoding it: a token's JSON around its
# text, and each log probability entry (``{"id":..,"token":..,"logprob":..,"bytes":[..]}``,
# nested the same way in every family). Python holds the unencoded objects in about as much.
EVENT_OVERHEAD_BYTES = 96
LOGPROB_ENTRY_BYTES = 96


def event_bytes(event: EngineEvent | PromptProgress) -> int:
    """The estimated encoded size of one engine event."""
    if not isinstance(event, TokenDelta):
        return EVENT_OVERHEAD_BYTES
    size = EVENT_OVERHEAD_BYTES + 4 * len(event.text)
    for entry in event.logprobs:
        size += (1 + len(entry.top)) * LOGPROB_ENTRY_BYTES + 4 * len(entry.token)
    return size


class LoopWaker:
    """Wakes the handles of one event loop that have new events, with one call into the loop
    for all of those that asked since its last run."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._lock = threading.Lock()
        self._pending: list[RequestHandle] = []

    def request(self, handle: RequestHandle) -> None:
        """Called from the engine thread; raises ``RuntimeError`` when the loop is closed."""
        with self._lock:
            self._pending.append(handle)
            if len(self._pending) > 1:
                return  # a call is already on its way and will wake this handle too
        try:
            self._loop.call_soon_threadsafe(self._run)
        except RuntimeError:
            with self._lock:
                self._pending.clear()
            raise

    def _run(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for handle in pending:
            handle._wake()


_wakers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LoopWaker] = (
    weakref.WeakKeyDictionary())
_wakers_lock = threading.Lock()


def waker_for(loop: asyncio.AbstractEventLoop) -> LoopWaker:
    with _wakers_lock:
        waker = _wakers.get(loop)
        if waker is None:
            waker = _wakers[loop] = LoopWaker(loop)
        return waker


class RequestHandle:
    """Events flow engine thread -> event loop; cancellation flows the other way."""

    def __init__(self, request: GenerationRequest, loop: asyncio.AbstractEventLoop,
                 interval_s: float = 0.0, buffer_bytes: int = 0,
                 stall_timeout_s: float = 0.0) -> None:
        self.request = request
        self._interval_s = interval_s
        # 0: unbounded (a handle made outside the engine, as tests do)
        self._buffer_bytes = buffer_bytes
        self._stall_timeout_s = stall_timeout_s
        self._buffered = 0
        self._unread_since: float | None = None
        # why the handle cancelled its own request (a client that stopped reading), or None
        self.overflow: str | None = None
        # why the server stopped the request while its client was still there, or None
        self.server_reason: str | None = None
        self._last_wake = float("-inf")
        self._token_sent = False  # whether a TokenDelta was emitted yet (engine thread only)
        self._waker = waker_for(loop)
        self._lock = threading.Lock()
        self._buffer: list[EngineEvent | PromptProgress] = []
        self._wake_pending = False
        self._ready = asyncio.Event()
        self._cancelled = threading.Event()
        self.finished = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self, server_reason: str | None = None) -> None:
        """Ask the engine to stop this request at its next step: the client went away, or
        with ``server_reason`` the server stops it (a shutdown), which its stream then says."""
        if server_reason is not None and not self._cancelled.is_set():
            self.server_reason = server_reason
        self._cancelled.set()

    def emit(self, event: EngineEvent | PromptProgress) -> None:
        """Called from the engine thread."""
        final = isinstance(event, Finished)
        if final:
            self.finished.set()
        # The first token goes at once even after progress events woke the loop just before.
        first_token = not self._token_sent and isinstance(event, TokenDelta)
        if first_token:
            self._token_sent = True
        now = time.monotonic()
        with self._lock:
            self._buffer.append(event)
            if not final:
                self._bound(event, now)
            if self._wake_pending:
                return
            if not (final or first_token) and now - self._last_wake < self._interval_s:
                return  # goes with the next event (the engine always sends one more)
            self._last_wake = now
            self._wake_pending = True
        try:
            self._waker.request(self)
        except RuntimeError:
            # The event loop is gone (server shutting down): nobody is listening.
            self._cancelled.set()

    def _bound(self, event: EngineEvent | PromptProgress, now: float) -> None:
        """Cancel the request once its unread output is too large or too old (under _lock)."""
        self._buffered += event_bytes(event)
        if self._unread_since is None:
            self._unread_since = now
        if self.overflow is not None or self._cancelled.is_set():
            return
        if self._buffer_bytes and self._buffered > self._buffer_bytes:
            self.overflow = (f"{self._buffered} bytes of output unread by the client "
                             f"(--stream-buffer-bytes {self._buffer_bytes})")
        elif self._stall_timeout_s and now - self._unread_since > self._stall_timeout_s:
            self.overflow = (f"output unread by the client for {now - self._unread_since:.1f} s "
                             f"(--stream-stall-timeout {self._stall_timeout_s:g})")
        if self.overflow is not None:
            log.info("request %s cancelled: %s", self.request.request_id, self.overflow)
            self._cancelled.set()

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        self._ready.set()

    async def batches_with_progress(self) -> AsyncIterator[list[EngineEvent | PromptProgress]]:
        """Every event, ``PromptProgress`` included, in order, in the groups that arrived
        together; ends after ``Finished``."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            with self._lock:
                batch, self._buffer = self._buffer, []
                self._buffered, self._unread_since = 0, None
            if not batch:
                continue
            yield batch
            if isinstance(batch[-1], Finished):
                return

    async def batches(self) -> AsyncIterator[list[EngineEvent]]:
        """``batches_with_progress`` without the progress events."""
        async for batch in self.batches_with_progress():
            events = [e for e in batch if not isinstance(e, PromptProgress)]
            if events:
                yield events

    async def events(self) -> AsyncIterator[EngineEvent]:
        async for batch in self.batches():
            for event in batch:
                yield event
