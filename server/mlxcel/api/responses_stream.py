"""Driving one streamed response: engine events in, Responses SSE events out.

Text is routed into a reasoning item and a message item as it arrives. With function tools
the text is held until generation ends, then parsed: calls arrive as whole function_call
items (their arguments in one delta), which the protocol allows.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

from ..engine.handle import RequestHandle
from ..engine.model import LoadedModel
from ..engine.request import Finished
from ..protocol.generated import parse_output
from ..protocol.reasoning_stream import Kind, ReasoningRouter
from ..protocol.responses import (
    finish_body,
    function_call_item,
    new_id,
)
from ..protocol.responses_events import ResponsesEventEncoder
from ..responses_store import ResponsesStores, StoredResponse
from ..sse import named_event
from .generation import stream_events
from .responses_compact import Compacted
from .responses_turn import PreparedTurn, remember

PART_OF = {"reasoning": "reasoning_text", "content": "output_text"}


def _item_for(kind: Kind) -> dict[str, Any]:
    if kind == "reasoning":
        return {"id": new_id("rs"), "type": "reasoning", "summary": [], "content": []}
    return {"id": new_id("msg"), "type": "message", "status": "in_progress",
            "role": "assistant", "content": []}


class _Writer:
    """One section (reasoning or message) open at a time, on top of the encoder."""

    def __init__(self, encoder: ResponsesEventEncoder) -> None:
        self.enc = encoder
        self.kind: Kind | None = None
        self.reasoning_text: list[str] = []
        self.wrote_message = False

    def segment(self, kind: Kind, text: str) -> Iterator[dict[str, Any]]:
        if kind != self.kind:
            yield from self.close()
            self.kind = kind
            self.wrote_message |= kind == "content"
            yield self.enc.add_item(_item_for(kind))
            yield self.enc.open_part(PART_OF[kind])
        if kind == "reasoning":
            self.reasoning_text.append(text)
        if text:
            yield self.enc.text_delta(PART_OF[kind], text)

    def close(self, status: str = "completed") -> Iterator[dict[str, Any]]:
        if self.kind is not None:
            yield from self.enc.close_part(PART_OF[self.kind])
            yield self.enc.close_item(status if self.kind == "content" else "completed")
        self.kind = None


def _closing(
    writer: _Writer, finished: Finished, model: LoadedModel, turn: PreparedTurn, held: str
) -> Iterator[dict[str, Any]]:
    status = "incomplete" if finished.reason == "length" else "completed"
    calls = []
    if turn.tools:
        parsed = parse_output(model, held, turn.tools, turn.opens_reasoning)
        calls = parsed.calls
        if parsed.reasoning is not None:
            yield from writer.segment("reasoning", parsed.reasoning)
        if parsed.content or not calls:
            yield from writer.segment("content", parsed.content)
    if not writer.wrote_message and not calls:
        yield from writer.segment("content", "")
    yield from writer.close(status)
    for call in calls:
        yield writer.enc.add_item(function_call_item(call))
        yield from writer.enc.arguments(call.arguments)
        yield writer.enc.close_item()


async def stream_response(
    handle: RequestHandle,
    turn: PreparedTurn,
    skeleton: dict[str, Any],
    model: LoadedModel,
    stores: ResponsesStores,
    compacted: Compacted | None = None,
) -> AsyncIterator[str]:
    enc = ResponsesEventEncoder()
    writer = _Writer(enc)
    router = ReasoningRouter(turn.opens_reasoning)
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
    held: list[str] = []
    async for event in stream_events(handle):
        if not isinstance(event, Finished):
            if turn.tools:
                held.append(event.text)
            else:
                yield send(e for kind, text in router.feed(event.text)
                           for e in writer.segment(kind, text))
            continue
        if event.reason == "error":
            yield send([enc.error(f"generation failed: {event.error}"),
                        enc.response_event("response.failed", _failed(skeleton, event))])
            stores.responses.delete(skeleton["id"])
            return
        if not turn.tools:
            yield send(e for kind, text in router.finish() for e in writer.segment(kind, text))
        yield send(_closing(writer, event, model, turn, "".join(held)))
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
