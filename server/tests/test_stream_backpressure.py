"""Backpressure: a stream whose client stops reading is cancelled once its unread output is
too large or too old (engine/handle.py), so it never grows the process."""

from __future__ import annotations

import asyncio

from mlxcel.engine.handle import RequestHandle, event_bytes
from mlxcel.generation import Finished, GenerationRequest, TokenDelta
from mlxcel.generation.events import TokenLogprob, TopLogprob


def _request() -> GenerationRequest:
    return GenerationRequest(prompt_tokens=(1, 2), max_tokens=4)


def _wide_token(alternatives: int) -> TokenDelta:
    top = tuple(TopLogprob(f"t{i}", -1.0, (116,), i) for i in range(alternatives))
    return TokenDelta("x", (1,), (TokenLogprob(1, "x", -0.5, (120,), top),))


def test_a_token_with_many_alternatives_is_estimated_at_their_size() -> None:
    assert event_bytes(_wide_token(2048)) > 2048 * 64
    assert event_bytes(TokenDelta("hello", (1,))) < 256


def test_unread_output_over_the_byte_bound_cancels_the_request() -> None:
    async def run() -> RequestHandle:
        handle = RequestHandle(_request(), asyncio.get_running_loop(), buffer_bytes=1_000_000)
        for _ in range(3):  # about 600 kB: under the bound
            handle.emit(_wide_token(2048))
        assert not handle.cancelled
        for _ in range(3):
            handle.emit(_wide_token(2048))
        return handle

    handle = asyncio.run(run())
    assert handle.cancelled
    assert handle.overflow is not None and "--stream-buffer-bytes" in handle.overflow


def test_a_reader_that_keeps_up_is_never_cancelled() -> None:
    async def run() -> tuple[RequestHandle, int]:
        handle = RequestHandle(_request(), asyncio.get_running_loop(), buffer_bytes=1_000_000)
        taken = 0

        async def engine() -> None:
            for _ in range(40):  # 8 MB in all, read as it comes
                handle.emit(_wide_token(2048))
                await asyncio.sleep(0.001)
            handle.emit(Finished("length", 2, 40))

        task = asyncio.create_task(engine())
        async for batch in handle.batches():
            taken += len(batch)
        await task
        return handle, taken

    handle, taken = asyncio.run(run())
    assert not handle.cancelled and taken == 41


def test_output_left_unread_past_the_stall_timeout_cancels_the_request() -> None:
    async def run() -> RequestHandle:
        handle = RequestHandle(_request(), asyncio.get_running_loop(), stall_timeout_s=0.2)
        handle.emit(TokenDelta("a", (1,)))
        await asyncio.sleep(0.3)
        assert not handle.cancelled  # judged when the engine next emits
        handle.emit(TokenDelta("b", (2,)))
        return handle

    handle = asyncio.run(run())
    assert handle.cancelled
    assert handle.overflow is not None and "--stream-stall-timeout" in handle.overflow


def test_the_final_event_is_kept_after_an_overflow() -> None:
    async def run() -> list[object]:
        handle = RequestHandle(_request(), asyncio.get_running_loop(), buffer_bytes=2048)
        for _ in range(100):
            handle.emit(TokenDelta("y" * 100, (1,)))
        handle.emit(Finished("cancelled", 2, 100))
        return [event async for event in handle.events()]

    events = asyncio.run(run())
    assert isinstance(events[-1], Finished) and events[-1].reason == "cancelled"
