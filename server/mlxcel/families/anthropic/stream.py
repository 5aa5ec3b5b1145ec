"""Driving one streamed Anthropic message: engine events through the output parser, its
pieces through the family's encoder (``pieces.py``), SSE out."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import Any

from ...api.engine_stream import stream_events
from ...chat.reasoning_tokens import ReasoningTokenCount
from ...engine.handle import RequestHandle
from ...generation import Finished
from ...sse import named_event
from .events import AnthropicEventEncoder
from .messages_wire import delta_usage_of, new_tool_use_id, stop_reason
from .pieces import AnthropicPieceEncoder
from .turn import MessagesTurn


def _send(events: Iterable[dict[str, Any]]) -> str:
    return "".join(named_event(e["type"], e) for e in events)


async def stream_message(handle: RequestHandle, shell: dict[str, Any],
                         turn: MessagesTurn) -> AsyncIterator[str]:
    enc = AnthropicEventEncoder()
    blocks = AnthropicPieceEncoder(enc, turn.with_thinking)
    counter = ReasoningTokenCount(
        turn.output.new_parser(turn.generation.request_id, new_tool_use_id))
    parser = counter.parser
    yield _send([enc.start(shell), enc.ping()])
    async for event in stream_events(handle):
        if not isinstance(event, Finished):
            yield _send(blocks.pieces(counter.feed(event)))
            continue
        if event.reason == "error":
            yield _send([enc.error(f"generation failed: {event.error}")])
            return
        events = [*blocks.pieces(parser.finish()), *blocks.finish()]
        reason, sequence = stop_reason(event, blocks.complete_calls > 0)
        usage = delta_usage_of(event.prompt_tokens, event.completion_tokens, counter.tokens)
        yield _send(events + enc.finish(reason, sequence, usage))
