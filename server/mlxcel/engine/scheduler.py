"""The prefill queue: requests waiting for a slot, ordered by X-Priority then arrival.

Bounded: when it is full, ``push`` raises ``QueueFull`` at once, so the route answers 503 (529
on Anthropic's routes) before any SSE header (admission control). Thread-safe: routes push from
the event loop, the engine thread pops.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator

from ..errors import QueueFull
from ..generation import PRIORITY_RANK
from .handle import RequestHandle

BUSY_MESSAGE = "All slots are busy. Please try again later."


class PrefillQueue:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._heap: list[tuple[int, int, RequestHandle]] = []
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._nonempty = threading.Condition(self._lock)
        self._pushes = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._heap)

    def push(self, handle: RequestHandle) -> None:
        self.push_all([handle])

    def push_all(self, handles: list[RequestHandle]) -> None:
        """Queue all of ``handles`` or none (QueueFull when they do not all fit)."""
        with self._lock:
            if len(self._heap) + len(handles) > self.capacity:
                raise QueueFull(BUSY_MESSAGE)
            for handle in handles:
                rank = PRIORITY_RANK.get(handle.request.priority, PRIORITY_RANK["normal"])
                heapq.heappush(self._heap, (rank, next(self._order), handle))
            self._pushes += len(handles)
            self._nonempty.notify()

    def pop(self, blocked: Callable[[RequestHandle], bool] | None = None) -> RequestHandle | None:
        """The first request in order; with ``blocked``, the first one it does not block
        (the others keep their place)."""
        with self._lock:
            if not self._heap:
                return None
            if blocked is None:
                return heapq.heappop(self._heap)[2]
            for item in sorted(self._heap, key=lambda item: item[:2]):
                if not blocked(item[2]):
                    self._heap.remove(item)
                    heapq.heapify(self._heap)
                    return item[2]
            return None

    def wait(self, timeout: float) -> None:
        """Block the engine thread until something is queued (or ``timeout``)."""
        with self._lock:
            if not self._heap:
                self._nonempty.wait(timeout)

    def settle(self, quiet: float, cap: float) -> None:
        """Block until no request has arrived for ``quiet`` seconds, or ``cap`` seconds have
        passed: an idle engine lets a burst of requests finish arriving, so they start
        together in one batch rather than the first alone and the rest a step later."""
        deadline = time.monotonic() + cap
        with self._lock:
            while (left := deadline - time.monotonic()) > 0:
                seen = self._pushes
                self._nonempty.wait(min(quiet, left))
                if self._pushes == seen:
                    return

    def wake(self) -> None:
        with self._lock:
            self._nonempty.notify_all()

    def drop_cancelled(self) -> list[RequestHandle]:
        """Take requests whose client already left out of the queue (frees its capacity)."""
        with self._lock:
            gone = [item for item in self._heap if item[2].cancelled]
            if gone:
                self._heap = [item for item in self._heap if not item[2].cancelled]
                heapq.heapify(self._heap)
        return [handle for _, _, handle in gone]

    def snapshot(self) -> Iterator[RequestHandle]:
        with self._lock:
            items = sorted(self._heap, key=lambda item: item[:2])
        return (handle for _, _, handle in items)

