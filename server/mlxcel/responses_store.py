"""In-memory stores for the Responses API: stored responses (for GET/DELETE/cancel and
``previous_response_id``) and string-id conversations.

Both are LRU maps with a time-to-live, bounded by entries and by bytes (the text they hold:
a data-URI image is megabytes); a capacity of 0 entries disables the store, an entry larger
than the whole byte budget is not stored. Entries hold the response object as sent to the
client and the conversation history (chat-template messages) that a follow-up continues from.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .config import ServerConfig

V = TypeVar("V")


def approx_bytes(value: Any) -> int:
    """The memory a JSON-like value holds, roughly: its strings' lengths plus a few bytes per
    number and container (walked without recursion)."""
    total, stack = 0, [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            total += len(node)
        elif isinstance(node, dict):
            total += 16
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            total += 16
            stack.extend(node)
        elif isinstance(node, StoredResponse):
            stack.extend((node.body, node.history))
        else:
            total += 8
    return total


class TTLStore(Generic[V]):
    """A thread-safe LRU map whose entries expire ``ttl_secs`` after their last write, holding
    at most ``max_entries`` entries and ``max_bytes`` bytes (by ``approx_bytes``)."""

    def __init__(
        self, max_entries: int, ttl_secs: float, clock: Callable[[], float] = time.monotonic,
        max_bytes: int | None = None,
    ) -> None:
        self.max_entries = max(0, max_entries)
        self.ttl_secs = ttl_secs
        self.max_bytes = max_bytes
        self._clock = clock
        self._items: OrderedDict[str, tuple[float, V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.max_entries > 0

    @property
    def bytes_held(self) -> int:
        with self._lock:
            return self._bytes

    def put(self, key: str, value: V) -> None:
        if not self.enabled:
            return
        size = approx_bytes(value) if self.max_bytes is not None else 0
        with self._lock:
            self._pop(key)
            if self.max_bytes is not None and size > self.max_bytes:
                return  # larger than the whole store: kept nowhere
            self._items[key] = (self._clock() + self.ttl_secs, value, size)
            self._bytes += size
            while len(self._items) > self.max_entries or (
                    self.max_bytes is not None and self._bytes > self.max_bytes):
                self._pop(next(iter(self._items)))

    def _pop(self, key: str) -> bool:
        entry = self._items.pop(key, None)
        if entry is None:
            return False
        self._bytes -= entry[2]
        return True

    def get(self, key: str) -> V | None:
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            expires, value, _ = entry
            if self.ttl_secs > 0 and expires <= self._clock():
                self._pop(key)
                return None
            self._items.move_to_end(key)
            return value

    def delete(self, key: str) -> bool:
        with self._lock:
            return self._pop(key)

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


def stores_for(config: ServerConfig) -> ResponsesStores:
    """The stores the server's settings describe."""
    return make_stores(
        config.responses_store_max_entries, config.responses_store_ttl_secs,
        config.conversation_store_max_entries, config.conversation_store_ttl_secs,
        config.responses_store_max_bytes,
    )


def make_stores(
    responses_max: int, responses_ttl: float, conversations_max: int, conversations_ttl: float,
    max_bytes: int | None = None,
) -> ResponsesStores:
    """The two stores; ``max_bytes`` bounds each of them."""
    return ResponsesStores(
        TTLStore(responses_max, responses_ttl, max_bytes=max_bytes),
        TTLStore(conversations_max, conversations_ttl, max_bytes=max_bytes),
    )
