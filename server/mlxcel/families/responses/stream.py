"""Driving one streamed response: engine events through the output parser, its pieces
through the family's encoder (``pieces.py``), SSE out. The response is in ``running`` while it
is generated and stored when it ends, however it ends: a client that goes away leaves it
``cancelled`` with what was generated, never ``in_progress``."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any

import anyio

from ...api.engine_stream import stream_events
from ...api.offload import off_loop
from ...chat.reasoning_tokens import ReasoningTokenCount
from ...engine.handle import RequestHandle
from ...generation import Finished
from ...sse import named_event
from .compact_routes import Compacted
from .events import ResponsesEventEncoder
from .pieces import ResponsesPieceEncoder
from .response_store import StoredResponse
from .responses_wire import finish_body
from .store_service import ResponsesStores, log
from .turn import PreparedTurn, remember


def _send(events: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> str:
    return "".join(named_event(e["type"], e) for e in events)


def _finish(skeleton: dict[str, Any], finished: Finished, writer: ResponsesPieceEncoder,
            reasoning_tokens: int) -> dict[str, Any]:
    """The final body; ``reasoning_tokens`` counted from the engine's token stream."""
    return finish_body(skeleton, finished, writer.enc.output, reasoning_tokens)


async def stream_response(
    handle: RequestHandle,
    turn: PreparedTurn,
    skeleton: dict[str, Any],
    stores: ResponsesStores,
    compacted: Compacted | None = None,
) -> AsyncIterator[str]:
    """The response's events as SSE text; closing it (the client went away) stops the
    generation and stores the response ``cancelled``."""
    events = response_events(handle, turn, skeleton, stores, compacted)
    async with contextlib.aclosing(events):
        async for batch in events:
            yield _send(batch)


async def response_events(
    handle: RequestHandle,
    turn: PreparedTurn,
    skeleton: dict[str, Any],
    stores: ResponsesStores,
    compacted: Compacted | None = None,
) -> AsyncGenerator[list[dict[str, Any]], None]:
    """The response's events, in the groups that are sent together. ``skeleton`` with
    ``background: true`` starts ``queued``, and its end is stored however it ends (a failure or
    a server stop reads ``failed``)."""
    enc = ResponsesEventEncoder()
    writer = ResponsesPieceEncoder(enc)
    counter = ReasoningTokenCount(turn.output.new_parser(skeleton["id"]))
    parser = counter.parser
    response_id = skeleton["id"]
    background = bool(skeleton.get("background"))
    kept = turn.body.store is not False and stores.responses.enabled
    if kept:
        stores.running.start(response_id, skeleton, handle.cancel)
    generated, ended = 0, False
    try:
        started = {**skeleton, "status": "in_progress"}
        if background:
            yield [enc.response_event("response.created", skeleton),
                   enc.response_event("response.queued", skeleton)]
            stores.running.update(response_id, started)
        else:
            yield [enc.response_event("response.created", skeleton)]
        yield [enc.response_event("response.in_progress", started)]
        if compacted is not None:
            # Compaction ran before the stream opened (so its 400s are real statuses); its
            # events still come first, in the documented order.
            before, after = compacted.tokens_before, compacted.tokens_after
            yield [enc.custom("mlx.compaction.started", input_tokens_before=before),
                   enc.custom("mlx.compaction.completed", input_tokens_before=before,
                              input_tokens_after=after),
                   enc.add_item(compacted.item()), enc.close_item()]
        async for event in stream_events(handle):
            if not isinstance(event, Finished):
                generated += len(event.token_ids)
                yield list(writer.pieces(counter.feed(event)))
                continue
            ended = True
            if background and event.reason == "cancelled" and handle.server_reason:
                event = Finished("error", event.prompt_tokens, event.completion_tokens,
                                 error=handle.server_reason)
            if event.reason == "error":  # a failed response is kept only in the background
                failed = _failed(started, event)
                if background and not stores.running.deleted(response_id):
                    await off_loop(stores.responses.put, response_id,
                                   StoredResponse(failed, turn.history))
                yield [enc.error(f"generation failed: {event.error}"),
                       enc.response_event("response.failed", failed)]
                return
            status = "incomplete" if event.reason == "length" else "completed"
            closing = [*writer.pieces(parser.finish()), *writer.finish(status)]
            final = _finish(started, event, writer, counter.tokens)
            if not stores.running.deleted(response_id):
                await off_loop(remember, stores, turn, final)
            streamed = final
            if final["status"] == "cancelled":
                # No event means "cancelled": the stream ends incomplete; the store says
                # cancelled.
                streamed = {**final, "status": "incomplete"}
            terminal = "response.completed" if streamed["status"] == "completed" else \
                "response.incomplete"
            yield [*closing, enc.response_event(terminal, streamed)]
    finally:
        if not handle.finished.is_set():
            handle.cancel()
        if kept and not ended and not stores.running.deleted(response_id):
            await _keep_unfinished(stores, turn, skeleton, writer, counter.tokens,
                                   Finished("cancelled", len(turn.prompt), generated))
        stores.running.end(response_id)


async def _keep_unfinished(stores: ResponsesStores, turn: PreparedTurn,
                           skeleton: dict[str, Any], writer: ResponsesPieceEncoder,
                           reasoning_tokens: int, finished: Finished) -> None:
    """Store a response whose stream stopped early (the client went away): ``cancelled``,
    with the items generated so far, the open one ``incomplete``. Shielded: the stream's task
    is being cancelled, and the write must still happen."""
    with contextlib.suppress(RuntimeError):  # nothing open, or the protocol already ended
        list(writer.close("incomplete"))
    with anyio.CancelScope(shield=True):
        try:
            final = _finish(skeleton, finished, writer, reasoning_tokens)
            await off_loop(remember, stores, turn, final)
        except Exception:  # a store that fails must not turn a disconnect into a traceback loop
            log.exception("storing the cancelled response %s failed", skeleton["id"])


def _failed(skeleton: dict[str, Any], finished: Finished) -> dict[str, Any]:
    return {**skeleton, "status": "failed",
            "error": {"code": "server_error", "message": f"generation failed: {finished.error}"}}
