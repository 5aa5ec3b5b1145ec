"""Driving one streamed Anthropic message: engine events in, Anthropic SSE events out.

Text streams as a text block (reasoning as a thinking block when thinking was asked for,
else it is left out). With tools the text is held until generation ends and then parsed:
each call is a whole tool_use block with its input in one ``input_json_delta``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

from ..engine.handle import RequestHandle
from ..engine.model import LoadedModel
from ..engine.request import Finished
from ..protocol.anthropic import delta_usage_of, new_tool_use_id, stop_reason, tool_input
from ..protocol.anthropic_events import AnthropicEventEncoder, empty_block
from ..protocol.generated import parse_output
from ..protocol.reasoning_stream import Kind, ReasoningRouter
from ..sse import named_event
from .generation import stream_events

BLOCK_OF: dict[Kind, str] = {"reasoning": "thinking", "content": "text"}


class _Blocks:
    def __init__(self, encoder: AnthropicEventEncoder, with_thinking: bool) -> None:
        self.enc = encoder
        self.with_thinking = with_thinking
        self.wrote_text = False

    def segment(self, kind: Kind, text: str) -> Iterator[dict[str, Any]]:
        if kind == "reasoning" and not self.with_thinking:
            return
        block = BLOCK_OF[kind]
        if self.enc.open_type != block:
            yield from self.close()
            self.wrote_text |= block == "text"
            yield self.enc.open_block(empty_block(block))
        if text:
            yield self.enc.delta(text)

    def close(self) -> Iterator[dict[str, Any]]:
        if self.enc.open_type is not None:
            yield self.enc.close_block()


def _closing(blocks: _Blocks, model: LoadedModel, tools: list[dict[str, Any]] | None,
             opens: bool, held: str) -> tuple[list[dict[str, Any]], bool]:
    events: list[dict[str, Any]] = []
    calls = []
    if tools:
        parsed = parse_output(model, held, tools, opens)
        calls = parsed.calls
        if parsed.reasoning is not None:
            events += blocks.segment("reasoning", parsed.reasoning)
        if parsed.content or not calls:
            events += blocks.segment("content", parsed.content)
    if not blocks.wrote_text and not calls:
        events += blocks.segment("content", "")
    events += blocks.close()
    for call in calls:
        events.append(blocks.enc.open_block(
            empty_block("tool_use", id=new_tool_use_id(), name=call.name)))
        events.append(blocks.enc.delta(json.dumps(tool_input(call.arguments))))
        events.append(blocks.enc.close_block())
    return events, bool(calls)


def _send(events: Iterable[dict[str, Any]]) -> str:
    return "".join(named_event(e["type"], e) for e in events)


async def stream_message(
    handle: RequestHandle,
    shell: dict[str, Any],
    model: LoadedModel,
    tools: list[dict[str, Any]] | None,
    opens_reasoning: bool,
    with_thinking: bool,
) -> AsyncIterator[str]:
    enc = AnthropicEventEncoder()
    blocks = _Blocks(enc, with_thinking)
    router = ReasoningRouter(opens_reasoning)
    yield _send([enc.start(shell), enc.ping()])
    held: list[str] = []
    async for event in stream_events(handle):
        if not isinstance(event, Finished):
            if tools:
                held.append(event.text)
            else:
                yield _send(e for k, t in router.feed(event.text) for e in blocks.segment(k, t))
            continue
        if event.reason == "error":
            yield _send([enc.error(f"generation failed: {event.error}")])
            return
        if not tools:
            yield _send(e for k, t in router.finish() for e in blocks.segment(k, t))
        events, has_calls = _closing(blocks, model, tools, opens_reasoning, "".join(held))
        reason, sequence = stop_reason(event, has_calls)
        usage = delta_usage_of(event.prompt_tokens, event.completion_tokens)
        yield _send(events + enc.finish(reason, sequence, usage))
