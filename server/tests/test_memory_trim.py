"""``memory.py`` (issue 20, acceptance: RSS back within 10% after a hostile run): freed pages
are handed back after large bodies, once they stop coming, and only then."""

from __future__ import annotations

import asyncio

import pytest

from mlxcel import memory


@pytest.fixture
def trims(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per trim the server asks for (glibc's trim replaced)."""
    calls: list[int] = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda: calls.append(1))
    monkeypatch.setattr(memory, "_pending", False)
    return calls


def test_a_trim_follows_a_large_body_only(trims: list[int]) -> None:
    calls = trims

    async def run() -> None:
        task = asyncio.create_task(memory.trim_after_large_bodies(0.01))
        memory.note_body(10)  # small: nothing to give back
        await asyncio.sleep(0.05)
        assert calls == []
        memory.note_body(memory.TRIM_AFTER_BYTES)
        memory.note_body(memory.TRIM_AFTER_BYTES)  # two bodies, one trim
        await asyncio.sleep(0.05)
        task.cancel()

    asyncio.run(run())
    assert calls == [1]


def test_no_trim_while_large_bodies_keep_coming(trims: list[int]) -> None:
    """Each trim would hand back the pages the next body's parse reuses."""
    calls = trims

    async def run() -> None:
        task = asyncio.create_task(memory.trim_after_large_bodies(0.05))
        for _ in range(10):  # one body every 20 ms for 200 ms: four intervals
            memory.note_body(memory.TRIM_AFTER_BYTES)
            await asyncio.sleep(0.02)
        assert calls == []
        await asyncio.sleep(0.15)  # quiet for three intervals: one trim
        task.cancel()

    asyncio.run(run())
    assert calls == [1]


def test_malloc_trim_is_found_on_glibc_or_absent() -> None:
    trim = memory._malloc_trim()
    if trim is not None:
        trim()  # returns memory; must not raise


def test_arenas_are_capped_unless_the_environment_says(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")
    assert memory.limit_malloc_arenas() is False  # the operator's setting wins
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    applied = memory.limit_malloc_arenas()
    assert applied is (memory._libc_function("mallopt") is not None)


def test_freed_memory_is_kept_unless_the_environment_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    glibc = memory._libc_function("mallopt") is not None
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")  # the operator's setting wins
    assert memory.keep_freed_memory() == (["MALLOC_MMAP_THRESHOLD_"] if glibc else [])
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    assert memory.keep_freed_memory() == (
        ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"] if glibc else [])
