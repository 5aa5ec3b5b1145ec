"""The prompt cache: KV caches of finished sequences, reused by later requests that share a
prefix (LRU by bytes and entry count, with a time-to-live).

Entries are keyed by the token ids their KV cache holds. A lookup takes the entry with the
longest common prefix, copies it and trims the copy to that prefix, always leaving at least one
prompt token to prefill (the model must produce logits for the first new token).
"""

from __future__ import annotations

import copy
import itertools
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
from mlx_lm.models.cache import can_trim_prompt_cache, trim_prompt_cache

from ..settings.engine_options import (  # noqa: F401 - the engine's names for them
    DEFAULT_CAPACITY_BYTES,
    DEFAULT_MAX_ENTRIES,
    DEFAULT_TTL_S,
)

BLOCK_SIZE = 16


@dataclass
class _Entry:
    tokens: tuple[int, ...]
    cache: list[Any]
    nbytes: int
    last_used: float


def _common_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def disabled_stats() -> dict[str, Any]:
    """The stable payload of /v1/cache/stats when the cache is off."""
    return PromptCache(0, 0, 0.0, enabled=False).stats()


class PromptCache:
    def __init__(
        self,
        capacity_bytes: int = DEFAULT_CAPACITY_BYTES,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl_s: float = DEFAULT_TTL_S,
        *,
        enabled: bool = True,
    ) -> None:
        self.enabled = enabled
        self.capacity_bytes = capacity_bytes
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = self.lookups = self.inserts = 0
        self.evictions_lru = self.evictions_ttl = self.rejections_oversized = 0

    def __len__(self) -> int:
        return len(self._entries)

    def lookup(self, prompt: tuple[int, ...]) -> tuple[int, list[Any] | None]:
        """``(cached token count, a private copy of the cache)``; ``(0, None)`` on a miss."""
        with self._lock:
            self._expire()
            self.lookups += 1
            best_id, best_len = -1, 0
            for entry_id, entry in self._entries.items():
                n = min(_common_prefix(entry.tokens, prompt), len(prompt) - 1)
                if n > best_len and (n == len(entry.tokens) or can_trim_prompt_cache(entry.cache)):
                    best_id, best_len = entry_id, n
            if best_len == 0:
                return 0, None
            entry = self._entries[best_id]
            entry.last_used = time.monotonic()
            self._entries.move_to_end(best_id)
            self.hits += 1
            cache = copy.deepcopy(entry.cache)
        trim = len(entry.tokens) - best_len
        if trim > 0:
            trim_prompt_cache(cache, trim)
        return best_len, cache

    def insert(self, tokens: list[int] | tuple[int, ...], cache: list[Any]) -> None:
        key = tuple(tokens)
        if not key:
            return
        nbytes = sum(int(getattr(c, "nbytes", 0)) for c in cache)
        with self._lock:
            if nbytes > self.capacity_bytes:
                self.rejections_oversized += 1
                return
            # An entry that is a prefix of the new one is superseded by it.
            for entry_id, entry in list(self._entries.items()):
                if key[: len(entry.tokens)] == entry.tokens:
                    self._drop(entry_id)
            self._entries[next(self._ids)] = _Entry(key, cache, nbytes, time.monotonic())
            self.bytes += nbytes
            self.inserts += 1
            while self._entries and (
                self.bytes > self.capacity_bytes or len(self._entries) > self.max_entries
            ):
                self._drop(next(iter(self._entries)))
                self.evictions_lru += 1

    def _drop(self, entry_id: int) -> None:
        entry = self._entries.pop(entry_id)
        self.bytes -= entry.nbytes

    def _expire(self) -> None:
        now = time.monotonic()
        for entry_id, entry in list(self._entries.items()):
            if now - entry.last_used > self.ttl_s:
                self._drop(entry_id)
                self.evictions_ttl += 1

    def reset(self) -> dict[str, Any]:
        """Drop every entry; the snapshot of what was freed."""
        with self._lock:
            freed = self.stats()
            for entry_id in list(self._entries):
                self._drop(entry_id)
        # MLX keeps freed buffers for reuse (a long prefill's temporaries included): a reset
        # gives them back to the system too.
        mx.clear_cache()
        return freed

    def stats(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "apc_enabled": False,
            "block_size": BLOCK_SIZE,
            "hash": "sha256",
            "entries": len(self._entries),
            "bytes": self.bytes,
            "capacity_bytes": self.capacity_bytes,
            "max_entries": self.max_entries,
            "hits": self.hits,
            "lookups": self.lookups,
            "hit_rate": self.hits / self.lookups if self.lookups else 0.0,
            "inserts": self.inserts,
            "evictions_lru": self.evictions_lru,
            "evictions_ttl": self.evictions_ttl,
            "rejections_oversized": self.rejections_oversized,
            "total_blocks_stored": 0,
            "unique_block_hashes": 0,
            "apc_active_entries": 0,
        }
