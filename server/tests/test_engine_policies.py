"""Loop detection, the prefill queue (priority, admission) and the prompt cache."""

from __future__ import annotations

import asyncio
import threading
import time

import mlx.core as mx
import pytest
from mlx_lm.models.cache import KVCache

from mlxcel.engine.handle import RequestHandle
from mlxcel.engine.loop_detection import FAMILY_DEFAULT, OFF, parse_env, resolve, tail_loops
from mlxcel.engine.prompt_cache import PromptCache, disabled_stats
from mlxcel.engine.scheduler import PrefillQueue
from mlxcel.errors import ServerBusy
from mlxcel.generation import GenerationRequest, LoopDetection

LOOP = LoopDetection(max_pattern_size=3, min_pattern_size=1, min_count=3)


def test_tail_loops() -> None:
    assert tail_loops([5, 1, 2, 1, 2, 1, 2], LOOP)
    assert tail_loops([7, 7, 7], LOOP)
    assert not tail_loops([1, 2, 1, 2, 3], LOOP)
    assert not tail_loops([7, 7, 7], OFF)


def test_loop_policy_order() -> None:
    gemma = {"model_type": "gemma4_text"}
    assert resolve(None, gemma, {}) == FAMILY_DEFAULT
    assert resolve(None, {"model_type": "qwen3"}, {}) == OFF
    assert resolve(None, gemma, {"MLXCEL_LOOP_DETECTION": "off"}) == OFF
    assert resolve(None, {}, {"MLXCEL_LOOP_DETECTION": "2,8,5"}) == LoopDetection(8, 2, 5)
    forced_off = LoopDetection(max_pattern_size=0)
    assert resolve(forced_off, gemma, {"MLXCEL_LOOP_DETECTION": "on"}) == forced_off
    assert parse_env("nonsense") is None


def _handle(priority: str, loop: asyncio.AbstractEventLoop) -> RequestHandle:
    return RequestHandle(GenerationRequest((1,), 1, priority=priority), loop)  # type: ignore[arg-type]


def test_queue_orders_by_priority_then_arrival() -> None:
    loop = asyncio.new_event_loop()
    try:
        queue = PrefillQueue(8)
        handles = [_handle(p, loop) for p in ("low", "normal", "high", "normal", "high")]
        for handle in handles:
            queue.push(handle)
        order = [queue.pop() for _ in handles]
        assert order == [handles[2], handles[4], handles[1], handles[3], handles[0]]
        assert queue.pop() is None
    finally:
        loop.close()


def test_full_queue_is_server_busy_and_cancelled_entries_leave() -> None:
    loop = asyncio.new_event_loop()
    try:
        queue = PrefillQueue(2)
        first, second = _handle("normal", loop), _handle("normal", loop)
        queue.push(first)
        queue.push(second)
        with pytest.raises(ServerBusy) as info:
            queue.push(_handle("high", loop))
        assert info.value.status == 503 and info.value.type == "server_busy"
        first.cancel()
        assert queue.drop_cancelled() == [first]
        assert len(queue) == 1
    finally:
        loop.close()


def test_waiting_snapshot_take_and_wait_for_arrival() -> None:
    """What the engine's planner reads (the queue in order, with arrival times), how it takes
    a planned request out, and the wait an idle engine uses to let a burst finish arriving:
    it returns at the next push, queued requests or not, and otherwise after its timeout."""
    loop = asyncio.new_event_loop()
    try:
        queue = PrefillQueue(8)
        low, high = _handle("low", loop), _handle("high", loop)
        queue.push_all([low, high])
        waiting = queue.waiting()
        assert [item.handle for item in waiting] == [high, low]
        assert 0 <= time.monotonic() - waiting[0].arrived < 5.0
        assert queue.take(low) and not queue.take(low)
        assert list(queue.snapshot()) == [high]

        started = time.monotonic()
        queue.wait_for_arrival(0.05)
        assert 0.04 <= time.monotonic() - started < 1.0

        pusher = threading.Timer(0.05, lambda: queue.push(_handle("normal", loop)))
        started = time.monotonic()
        pusher.start()
        queue.wait_for_arrival(5.0)
        pusher.join()
        assert time.monotonic() - started < 2.0, "the wait outlived the arrival"
        assert len(queue) == 2
    finally:
        loop.close()


def _cache(tokens: int) -> list[KVCache]:
    cache = KVCache()
    cache.update_and_fetch(mx.zeros((1, 1, tokens, 4)), mx.zeros((1, 1, tokens, 4)))
    return [cache]


def test_prompt_cache_prefix_hit_trims_a_copy() -> None:
    pc = PromptCache(10**9, 8, 60.0)
    pc.insert([1, 2, 3, 4, 5], _cache(5))
    cached, cache = pc.lookup((1, 2, 3, 9))
    assert cached == 3 and cache is not None and cache[0].offset == 3
    again, _ = pc.lookup((1, 2, 3, 4, 5))
    assert again == 4  # one prompt token is always left to prefill
    assert pc.lookup((7, 8))[0] == 0
    stats = pc.stats()
    assert (stats["hits"], stats["lookups"], stats["entries"]) == (2, 3, 1)
    assert stats["hit_rate"] == pytest.approx(2 / 3)


def test_prompt_cache_evicts_lru_rejects_oversized_and_expires() -> None:
    one = sum(c.nbytes for c in _cache(4))
    pc = PromptCache(one * 2, 8, 60.0)
    pc.insert([1, 1, 1, 1], _cache(4))
    pc.insert([2, 2, 2, 2], _cache(4))
    pc.insert([3, 3, 3, 3], _cache(4))
    assert pc.stats()["evictions_lru"] == 1 and len(pc) == 2
    pc.insert(list(range(600)), _cache(600))  # KVCache grows in 256-token steps
    assert pc.stats()["rejections_oversized"] == 1
    pc.ttl_s = 0.0
    time.sleep(0.01)
    pc.lookup((2, 2, 2, 2))
    assert pc.stats()["evictions_ttl"] == 2 and len(pc) == 0


def test_prompt_cache_reset_and_disabled_payload() -> None:
    pc = PromptCache()
    pc.insert([1, 2, 3], _cache(3))
    freed = pc.reset()
    assert freed["entries"] == 1 and pc.stats()["entries"] == 0 and pc.stats()["bytes"] == 0
    off = disabled_stats()
    assert off["enabled"] is False and off["entries"] == 0 and off["hit_rate"] == 0.0
    assert set(off) == set(pc.stats())
