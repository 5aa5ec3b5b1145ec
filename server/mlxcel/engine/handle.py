"""The bridge between the engine thread and one request's asyncio consumer."""

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
        self._queue: asyncio.Queue[EngineEvent] = asyncio.Queue()
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
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:
            # The event loop is gone (server shutting down): nobody is listening.
            self._cancelled.set()

    async def events(self) -> AsyncIterator[EngineEvent]:
        while True:
            event = await self._queue.get()
            yield event
            if isinstance(event, Finished):
                return
