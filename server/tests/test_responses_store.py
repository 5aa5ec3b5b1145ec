"""The Responses stores: LRU cap, time-to-live, capacity 0 disables."""

from __future__ import annotations

from mlxcel.responses_store import TTLStore


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_lru_cap_evicts_the_least_recently_used() -> None:
    store: TTLStore[int] = TTLStore(2, 100, Clock())
    store.put("a", 1)
    store.put("b", 2)
    assert store.get("a") == 1  # a is now the most recent
    store.put("c", 3)
    assert store.get("b") is None and store.get("a") == 1 and store.get("c") == 3
    assert len(store) == 2


def test_entries_expire_after_ttl() -> None:
    clock = Clock()
    store: TTLStore[int] = TTLStore(4, 10, clock)
    store.put("a", 1)
    clock.now = 9.9
    assert store.get("a") == 1
    clock.now = 10.0
    assert store.get("a") is None and len(store) == 0


def test_capacity_zero_stores_nothing() -> None:
    store: TTLStore[int] = TTLStore(0, 10, Clock())
    assert not store.enabled
    store.put("a", 1)
    assert store.get("a") is None and len(store) == 0


def test_delete() -> None:
    store: TTLStore[int] = TTLStore(4, 10, Clock())
    store.put("a", 1)
    assert store.delete("a") and not store.delete("a")
