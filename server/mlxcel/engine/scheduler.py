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
from typing import NamedTuple

from ..errors import QueueFull
from ..generation import PRIORITY_RANK
from .handle import RequestHandle

BUSY_MESSAGE = "All slots are busy. Please try again later."


class Waiting(NamedTuple):
    """A queued request in the queue's order, with when it arrived (``time.monotonic``)."""

    rank: int
    order: int
    arrived: float
    handle: RequestHandle


class PrefillQueue:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._heap: list[Waiting] = []
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
            now = time.monotonic()
            for handle in handles:
                rank = PRIORITY_RANK.get(handle.request.priority, PRIORITY_RANK["normal"])
                heapq.heappush(self._heap, Waiting(rank, next(self._order), now, handle))
            self._pushes += len(handles)
            self._nonempty.notify()

    def pop(self, blocked: Callable[[RequestHandle], bool] | None = None) -> RequestHandle | None:
        """The first request in order; with ``blocked``, the first one it does not block
        (the others keep their place)."""
        with self._lock:
            if not self._heap:
                return None
            if blocked is None:
                return heapq.heappop(self._heap).handle
            for item in sorted(self._heap):
                if not blocked(item.handle):
                    self._heap.remove(item)
                    heapq.heapify(self._heap)
                    return item.handle
            return None

    def take(self, handle: RequestHandle) -> bool:
        """Take ``handle`` out of the queue (the engine starts it); False if it is not there."""
        with self._lock:
            for item in self._heap:
                if item.handle is handle:
                    self._heap.remove(item)
                    heapq.heapify(self._heap)
                    return True
            return False

    def wait(self, timeout: float) -> None:
        """Block the engine thread until something is queued (or ``timeout``)."""
        with self._lock:
            if not self._heap:
                self._nonempty.wait(timeout)

    def wait_for_arrival(self, timeout: float) -> None:
        """Block the engine thread until the next request is queued (or ``timeout``), queued
        requests or not: an idle engine waits so for a burst to finish arriving
        (engine/step_plan.py)."""
        with self._lock:
            self._nonempty.wait(timeout)

    def wake(self) -> None:
        with self._lock:
            self._nonempty.notify_all()

    def drop_cancelled(self) -> list[RequestHandle]:
        """Take requests whose client already left out of the queue (frees its capacity)."""
        with self._lock:
            gone = [item for item in self._heap if item.handle.cancelled]
            if gone:
                self._heap = [item for item in self._heap if not item.handle.cancelled]
                heapq.heapify(self._heap)
        return [item.handle for item in gone]

    def waiting(self) -> list[Waiting]:
        """The queued requests in order (X-Priority, then arrival), with their arrival times."""
        with self._lock:
            return sorted(self._heap)

    def snapshot(self) -> Iterator[RequestHandle]:
        return (item.handle for item in self.waiting())

