"""The bridge between the engine thread and one request's asyncio consumer.

Events are appended to a buffer on the engine thread; the event loop is woken only when no
wake-up is already pending, and the consumer takes everything buffered at once. A consumer
that falls behind therefore costs one wake-up (and, for a stream, one socket write) per batch
of tokens instead of one per token, and the engine thread never waits on the loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

from .request import EngineEvent, Finished, GenerationRequest


class RequestHandle:
    """Events flow engine thread -> event loop; cancellation flows the other way."""

    def __init__(self, request: GenerationRequest, loop: asyncio.AbstractEventLoop) -> None:
        self.request = request
        self._loop = loop
        self._lock = threading.Lock()
        self._buffer: list[EngineEvent] = []
        self._wake_pending = False
        self._ready = asyncio.Event()
        self._cancelled = threading.Event()
        self.finished = threading.Event()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Ask the engine to stop this request at its next step (client went away)."""
        self._cancelled.set()

    def emit(self, event: EngineEvent) -> None:
        """Called from the engine thread."""
        if isinstance(event, Finished):
            self.finished.set()
        with self._lock:
            self._buffer.append(event)
            if self._wake_pending:
                return
            self._wake_pending = True
        try:
            self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:
            # The event loop is gone (server shutting down): nobody is listening.
            self._cancelled.set()

    def _wake(self) -> None:
        with self._lock:
            self._wake_pending = False
        self._ready.set()

    async def batches(self) -> AsyncIterator[list[EngineEvent]]:
        """Every event, in order, in the groups that arrived together; ends after
        ``Finished``."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            with self._lock:
                batch, self._buffer = self._buffer, []
            if not batch:
                continue
            yield batch
            if isinstance(batch[-1], Finished):
                return

    async def events(self) -> AsyncIterator[EngineEvent]:
        async for batch in self.batches():
            for event in batch:
                yield event
