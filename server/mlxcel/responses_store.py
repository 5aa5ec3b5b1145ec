"""In-memory stores for the Responses API: stored responses (for GET/DELETE/cancel and
``previous_response_id``) and string-id conversations.

Both are LRU maps with a time-to-live; a capacity of 0 disables the store. Entries hold the
response object as sent to the client and the conversation history (chat-template messages)
that a follow-up request continues from.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class TTLStore(Generic[V]):
    """A thread-safe LRU map whose entries expire ``ttl_secs`` after their last write."""

    def __init__(
        self, max_entries: int, ttl_secs: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.max_entries = max(0, max_entries)
        self.ttl_secs = ttl_secs
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, V]] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0

    def put(self, key: str, value: V) -> None:
        if not self.enabled:
            return
        with self._lock:
            self._items.pop(key, None)
            self._items[key] = (self._clock() + self.ttl_secs, value)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def get(self, key: str) -> V | None:
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            expires, value = entry
            if self.ttl_secs > 0 and expires <= self._clock():
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return value

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._items.pop(key, None) is not None

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


@dataclass
class StoredResponse:
    """A response as last sent, the messages a follow-up continues from, and the way to stop
    its generation while it runs."""

    body: dict[str, Any]
    history: list[dict[str, Any]] = field(default_factory=list)
    cancel: Callable[[], None] | None = None


@dataclass
class ResponsesStores:
    responses: TTLStore[StoredResponse]
    conversations: TTLStore[list[dict[str, Any]]]


def make_stores(
    responses_max: int, responses_ttl: float, conversations_max: int, conversations_ttl: float
) -> ResponsesStores:
    return ResponsesStores(
        TTLStore(responses_max, responses_ttl), TTLStore(conversations_max, conversations_ttl)
    )
