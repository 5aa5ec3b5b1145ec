"""The engine-thread -> event-loop bridge: order, batching of wake-ups, the end of a stream."""

from __future__ import annotations

import asyncio
import threading

from mlxcel.engine.handle import RequestHandle
from mlxcel.generation import EngineEvent, Finished, GenerationRequest, TokenDelta


def _request() -> GenerationRequest:
    return GenerationRequest(prompt_tokens=(1, 2), max_tokens=4)


def count_wakeups(loop: asyncio.AbstractEventLoop) -> list[int]:
    """Count the loop's ``call_soon_threadsafe`` calls from now on, in the returned list."""
    calls = [0]
    real = loop.call_soon_threadsafe

    def counting(*args: object) -> object:
        calls[0] += 1
        return real(*args)  # type: ignore[arg-type]

    loop.call_soon_threadsafe = counting  # type: ignore[method-assign]
    return calls


def consume_batches(handle: RequestHandle
                    ) -> tuple[list[list[EngineEvent]], asyncio.Task[None]]:
    """A task that appends each batch the handle yields to the returned list, until the end."""
    got: list[list[EngineEvent]] = []

    async def consume() -> None:
        async for batch in handle.batches():
            got.append(batch)

    return got, asyncio.create_task(consume())


def test_events_emitted_before_the_loop_drains_arrive_as_one_batch_in_order() -> None:
    async def run() -> list[list[EngineEvent]]:
        handle = RequestHandle(_request(), asyncio.get_running_loop())
        calls = count_wakeups(asyncio.get_running_loop())

        def engine() -> None:
            for i in range(50):
                handle.emit(TokenDelta(str(i), (i,)))
            handle.emit(Finished("length", 2, 50))

        thread = threading.Thread(target=engine)
        thread.start()
        thread.join()  # everything is buffered before the loop runs again
        batches = [batch async for batch in handle.batches()]
        assert calls[0] == 1, "one wake-up for a whole backlog"
        return batches

    batches = asyncio.run(run())
    assert len(batches) == 1
    texts = [e.text for e in batches[0] if isinstance(e, TokenDelta)]
    assert texts == [str(i) for i in range(50)]
    assert isinstance(batches[0][-1], Finished)


def test_events_interleaved_with_the_consumer_all_arrive_once() -> None:
    async def run() -> list[EngineEvent]:
        handle = RequestHandle(_request(), asyncio.get_running_loop())

        def engine() -> None:
            for i in range(500):
                handle.emit(TokenDelta(str(i), (i,)))
            handle.emit(Finished("length", 2, 500))

        thread = threading.Thread(target=engine)
        thread.start()
        events = [event async for event in handle.events()]
        thread.join()
        return events

    events = asyncio.run(run())
    assert [e.text for e in events[:-1]] == [str(i) for i in range(500)]  # type: ignore[union-attr]
    assert isinstance(events[-1], Finished)
    assert sum(isinstance(e, Finished) for e in events) == 1


def test_one_step_for_many_requests_wakes_the_loop_once() -> None:
    async def run() -> tuple[int, list[list[EngineEvent]]]:
        loop = asyncio.get_running_loop()
        handles = [RequestHandle(_request(), loop) for _ in range(8)]
        calls = count_wakeups(loop)

        def engine() -> None:  # one batched step: a token for each, then each one's end
            for i, handle in enumerate(handles):
                handle.emit(TokenDelta(str(i), (i,)))
            for handle in handles:
                handle.emit(Finished("length", 2, 1))

        thread = threading.Thread(target=engine)
        thread.start()
        thread.join()
        received = []
        for handle in handles:
            received.append([event async for event in handle.events()])
        return calls[0], received

    calls, received = asyncio.run(run())
    assert calls == 1, "one wake-up for every request the step served"
    for i, events in enumerate(received):
        assert [e.text for e in events if isinstance(e, TokenDelta)] == [str(i)]
        assert isinstance(events[-1], Finished)


def test_a_closed_loop_cancels_the_request_instead_of_raising() -> None:
    loop = asyncio.new_event_loop()
    handle = RequestHandle(_request(), loop)
    loop.close()
    handle.emit(TokenDelta("x", (1,)))
    assert handle.cancelled
    other = RequestHandle(_request(), asyncio.new_event_loop())
    other.emit(TokenDelta("y", (2,)))  # another loop's waker is unaffected
    assert not other.cancelled


def test_a_paced_stream_wakes_the_loop_once_per_interval_and_at_once_for_the_end() -> None:
    """With an interval, the first token wakes the loop at once; tokens that follow within the
    interval wait for the next wake-up (never lost, never reordered); the end always wakes."""

    async def run() -> tuple[list[list[EngineEvent]], list[int]]:
        loop = asyncio.get_running_loop()
        handle = RequestHandle(_request(), loop, interval_s=60.0)
        calls = count_wakeups(loop)
        got, consumer = consume_batches(handle)
        handle.emit(TokenDelta("a", (1,)))
        await asyncio.sleep(0.01)  # the loop takes the first token
        after_first = calls[0]
        for i in range(5):
            handle.emit(TokenDelta(str(i), (i,)))
            await asyncio.sleep(0.005)
        held = (calls[0], len(got))
        handle.emit(Finished("length", 2, 6))
        await asyncio.wait_for(consumer, 5)
        return got, [after_first, *held, calls[0]]

    got, counts = asyncio.run(run())
    assert counts == [1, 1, 1, 2], "first token at once, the next five held, the end at once"
    assert [[getattr(e, "text", "end") for e in batch] for batch in got] == [
        ["a"], ["0", "1", "2", "3", "4", "end"]]


def test_a_stream_slower_than_the_interval_sends_each_token_on_its_own() -> None:
    """Pacing groups only tokens that come faster than one per interval: a token that follows
    the last wake-up by more than the interval wakes the loop at once, alone."""

    async def run() -> tuple[list[list[EngineEvent]], int]:
        loop = asyncio.get_running_loop()
        handle = RequestHandle(_request(), loop, interval_s=0.01)
        calls = count_wakeups(loop)
        got, consumer = consume_batches(handle)
        for i in range(4):
            handle.emit(TokenDelta(str(i), (i,)))
            await asyncio.sleep(0.03)  # three intervals between tokens
        handle.emit(Finished("length", 2, 4))
        await asyncio.wait_for(consumer, 5)
        return got, calls[0]

    got, wakeups = asyncio.run(run())
    assert wakeups == 5, "one wake-up per token and one for the end"
    assert [[getattr(e, "text", "end") for e in batch] for batch in got] == [
        ["0"], ["1"], ["2"], ["3"], ["end"]]


def test_the_first_token_wakes_the_loop_at_once_after_progress_events() -> None:
    """A request that asked for prompt progress (llama-server's ``return_progress``) gets its
    first token as soon as it is generated, not an interval after the last progress event."""
    from mlxcel.generation import PromptProgress

    async def run() -> tuple[list[list[EngineEvent | PromptProgress]], list[int]]:
        loop = asyncio.get_running_loop()
        handle = RequestHandle(_request(), loop, interval_s=60.0)
        calls = count_wakeups(loop)
        got: list[list[EngineEvent | PromptProgress]] = []

        async def consume() -> None:
            async for batch in handle.batches_with_progress():
                got.append(batch)

        consumer = asyncio.create_task(consume())
        handle.emit(PromptProgress(4, 0, 2))
        await asyncio.sleep(0.01)
        handle.emit(PromptProgress(4, 0, 4))  # within the interval: held
        await asyncio.sleep(0.01)
        handle.emit(TokenDelta("a", (1,)))  # the first token: at once, with what was held
        await asyncio.sleep(0.01)
        first = calls[0]
        handle.emit(TokenDelta("b", (2,)))  # held, as any token within the interval
        await asyncio.sleep(0.01)
        held = calls[0]
        handle.emit(Finished("length", 2, 2))
        await asyncio.wait_for(consumer, 5)
        return got, [first, held, calls[0]]

    got, counts = asyncio.run(run())
    assert counts == [2, 2, 3], "progress, then the first token at once, then the end"
    assert [[type(e).__name__ for e in batch] for batch in got] == [
        ["PromptProgress"], ["PromptProgress", "TokenDelta"], ["TokenDelta", "Finished"]]
