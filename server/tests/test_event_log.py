"""The background responses' event log: readers resume after any kept event, follow new ones
until the log closes, and are told when what they ask for was dropped by the byte bound; the
registry drops ended logs after their time-to-live."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import pytest

from mlxcel.families.responses import background
from mlxcel.families.responses.background import BackgroundResponses
from mlxcel.families.responses.event_log import EventLog, EventsDropped


async def _read(log: EventLog, after: int = -1) -> list[str]:
    return [text async for text in log.follow(after)]


def test_a_reader_gets_the_events_after_the_one_it_names() -> None:
    async def run() -> list[str]:
        log = EventLog()
        for n in range(5):
            log.append(n, f"e{n}")
        log.close()
        return await _read(log, 2)

    assert asyncio.run(run()) == ["e3", "e4"]


def test_a_reader_follows_events_appended_while_it_waits() -> None:
    async def run() -> list[str]:
        log = EventLog()
        reader = asyncio.create_task(_read(log))
        for n in range(3):
            await asyncio.sleep(0)
            log.append(n, f"e{n}")
        await asyncio.sleep(0)
        log.close()
        return await asyncio.wait_for(reader, 5)

    assert asyncio.run(run()) == ["e0", "e1", "e2"]


def test_the_log_keeps_at_most_its_bytes_and_says_what_it_dropped() -> None:
    async def run() -> None:
        log = EventLog(max_bytes=25)
        for n in range(10):
            log.append(n, f"event{n}_")  # 8 bytes each: the last three are kept
        assert log.bytes_held <= 25 and log.first_kept == 7
        log.close()
        assert await _read(log, 6) == ["event7_", "event8_", "event9_"]
        with pytest.raises(EventsDropped, match="before sequence_number 7"):
            log.check_available(5)
        with pytest.raises(EventsDropped):
            await _read(log, 0)

    asyncio.run(run())


def test_ended_logs_go_after_their_time_to_live(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]

    async def one_event() -> AsyncGenerator[list[dict[str, Any]], None]:
        yield [{"type": "response.created", "sequence_number": 0}]

    async def nothing(exc: BaseException) -> None:
        raise AssertionError(exc)

    async def run() -> None:
        jobs = BackgroundResponses(clock=lambda: now[0])
        job = jobs.start("resp_a", one_event(), lambda reason: None, nothing)
        assert job.task is not None
        await job.task
        assert jobs.log_of("resp_a") is job.log and job.log.closed
        now[0] = background.LOG_TTL_S + 1
        assert jobs.log_of("resp_a") is None

    asyncio.run(run())


def test_a_crashed_generation_is_reported_and_its_log_closed() -> None:
    crashes: list[BaseException] = []

    async def broken() -> AsyncGenerator[list[dict[str, Any]], None]:
        yield [{"type": "response.created", "sequence_number": 0}]
        raise ValueError("boom")

    async def record(exc: BaseException) -> None:
        crashes.append(exc)

    async def run() -> None:
        jobs = BackgroundResponses()
        job = jobs.start("resp_b", broken(), lambda reason: None, record)
        assert job.task is not None
        await job.task
        assert job.log.closed and await _read(job.log) != []

    asyncio.run(run())
    assert [str(exc) for exc in crashes] == ["boom"]
