"""The events of one background response, kept so that a client can read the stream later or
resume it after the event it last saw (``GET /v1/responses/{id}?stream=true&starting_after=N``).

Each event is kept as the SSE text it is sent as, with its ``sequence_number``. The log is
bounded in bytes: past ``max_bytes`` the oldest events are dropped, and a reader asking for
one of them is told so (``EventsDropped``) rather than given a stream with a hole. Readers
never slow the generation: the writer appends and moves on; each reader follows at its own
pace. Everything runs on the event loop (no locks).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator

DEFAULT_MAX_BYTES = 4 * 1024 * 1024


class EventsDropped(Exception):
    """The events a reader asked for are no longer kept (the log passed its byte bound)."""

    def __init__(self, first_kept: int, wanted: int) -> None:
        super().__init__(f"events before sequence_number {first_kept} are no longer kept")
        self.first_kept, self.wanted = first_kept, wanted


class EventLog:
    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._events: deque[tuple[int, str]] = deque()
        self._bytes = 0
        self._next = 0  # the sequence_number the next event gets
        self._changed = asyncio.Event()
        self.closed = False

    @property
    def first_kept(self) -> int:
        return self._events[0][0] if self._events else self._next

    @property
    def bytes_held(self) -> int:
        return self._bytes

    def append(self, sequence_number: int, text: str) -> None:
        if self.closed:
            raise RuntimeError("append to a closed event log")
        self._events.append((sequence_number, text))
        self._next = sequence_number + 1
        self._bytes += len(text.encode("utf-8", "surrogatepass"))
        while self._bytes > self.max_bytes and len(self._events) > 1:
            _, dropped = self._events.popleft()
            self._bytes -= len(dropped.encode("utf-8", "surrogatepass"))
        self._wake()

    def close(self) -> None:
        """No more events: readers finish once they have read the last one."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _after(self, after: int) -> list[tuple[int, str]]:
        if after + 1 < self.first_kept:
            raise EventsDropped(self.first_kept, after + 1)
        return [event for event in self._events if event[0] > after]

    def check_available(self, after: int) -> None:
        """Raise ``EventsDropped`` now where the event after ``after`` is already gone."""
        self._after(after)

    async def follow(self, after: int = -1) -> AsyncIterator[str]:
        """The events whose sequence_number is above ``after``, then each new one as it comes,
        until the log is closed. A reader that falls so far behind that its next event was
        dropped gets ``EventsDropped``."""
        while True:
            changed = self._changed  # taken before reading, so no append is missed
            for number, text in self._after(after):
                after = number
                yield text
            if self.closed and after + 1 >= self._next:
                return
            await changed.wait()
