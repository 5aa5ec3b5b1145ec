"""Driving one streamed response: engine events through the output parser, its pieces
through the family's encoder (``pieces.py``), SSE out; the finished
response is stored."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from ...api.generation import stream_events
from ...engine.handle import RequestHandle
from ...engine.model import LoadedModel
from ...generation import Finished
from ...responses_store import ResponsesStores, StoredResponse
from ...sse import named_event
from .compact_routes import Compacted
from .events import ResponsesEventEncoder
from .models import finish_body
from .pieces import ResponsesPieceEncoder
from .turn import PreparedTurn, remember


async def stream_response(
    handle: RequestHandle,
    turn: PreparedTurn,
    skeleton: dict[str, Any],
    model: LoadedModel,
    stores: ResponsesStores,
    compacted: Compacted | None = None,
) -> AsyncIterator[str]:
    enc = ResponsesEventEncoder()
    writer = ResponsesPieceEncoder(enc)
    parser = turn.output.new_parser(skeleton["id"])
    if turn.body.store is not False:
        stores.responses.put(skeleton["id"], StoredResponse(skeleton, [], handle.cancel))

    def send(events: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> str:
        return "".join(named_event(e["type"], e) for e in events)

    yield send([enc.response_event("response.created", skeleton),
                enc.response_event("response.in_progress", skeleton)])
    if compacted is not None:
        # Compaction ran before the stream opened (so its 400s are real statuses); its events
        # still come first, in the documented order.
        before, after = compacted.tokens_before, compacted.tokens_after
        yield send([enc.custom("mlx.compaction.started", input_tokens_before=before),
                    enc.custom("mlx.compaction.completed", input_tokens_before=before,
                               input_tokens_after=after),
                    enc.add_item(compacted.item()), enc.close_item()])
    async for event in stream_events(handle):
        if not isinstance(event, Finished):
            yield send(writer.pieces(parser.feed(event.text)))
            continue
        if event.reason == "error":
            yield send([enc.error(f"generation failed: {event.error}"),
                        enc.response_event("response.failed", _failed(skeleton, event))])
            stores.responses.delete(skeleton["id"])
            return
        status = "incomplete" if event.reason == "length" else "completed"
        yield send([*writer.pieces(parser.finish()), *writer.finish(status)])
        reasoning = "".join(writer.reasoning_text)
        final = finish_body(skeleton, event, enc.output,
                            len(model.encode(reasoning)) if reasoning else 0)
        remember(stores, turn, final)
        streamed = final
        if final["status"] == "cancelled":
            # No event means "cancelled": the stream ends incomplete; the store says cancelled.
            streamed = {**final, "status": "incomplete"}
        terminal = "response.completed" if streamed["status"] == "completed" else \
            "response.incomplete"
        yield send([enc.response_event(terminal, streamed)])


def _failed(skeleton: dict[str, Any], finished: Finished) -> dict[str, Any]:
    return {**skeleton, "status": "failed",
            "error": {"code": "server_error", "message": f"generation failed: {finished.error}"}}
