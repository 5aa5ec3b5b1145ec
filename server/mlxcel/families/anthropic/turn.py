"""An Anthropic Messages request translated into the family-neutral chat turn
(``chat/turn.py``: tool_choice, thinking switch and budget, prefill) and its
``GenerationRequest``; and the non-streamed message's content blocks.

A trailing ``assistant`` message is always a prefill: the answer continues it (Anthropic's API
reference, Messages, ``messages``: "If the final message uses the assistant role, the response
content will continue immediately from the content in that message"), whatever
``--prefill-assistant`` says (that flag is the Chat route's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...chat.output import OutputSetup, ParsedOutput
from ...chat.turn import TurnSettings, build
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...generation import GenerationRequest
from .messages_wire import (
    DIRECT_CALLER,
    MessagesRequest,
    new_message_id,
    new_tool_use_id,
    tool_input,
    turn_request,
)


@dataclass(frozen=True)
class MessagesTurn:
    generation: GenerationRequest
    output: OutputSetup
    with_thinking: bool  # reasoning is sent as thinking blocks (else left out)


def to_messages_turn(body: MessagesRequest, model: LoadedModel, defaults: GenerationDefaults,
                     settings: TurnSettings | None = None) -> MessagesTurn:
    """Render the prompt and build the request (may read media: run it off the event loop).
    Everything the body says is read first, in one pass, then the neutral turn is built."""
    sampling, stop, with_thinking = body.sampling(defaults), body.stop_strings(), \
        body.thinking_enabled
    budget = body.thinking_budget()
    request = turn_request(body, body.max_tokens, budget)
    turn = build(request, model, settings or TurnSettings())
    generation = GenerationRequest(
        prompt_tokens=tuple(turn.prompt.tokens),
        max_tokens=body.max_tokens,
        sampling=sampling,
        stop=stop,
        logits_processor_factories=turn.constraints,
        request_id=new_message_id(),
        vision=turn.prompt.vision,
    )
    return MessagesTurn(generation, turn.output, with_thinking)


def content_blocks(parsed: ParsedOutput, with_thinking: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if with_thinking and parsed.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": parsed.reasoning, "signature": ""})
    if parsed.content or not parsed.calls:
        blocks.append({"type": "text", "text": parsed.content, "citations": None})
    for call in parsed.calls:
        blocks.append({"type": "tool_use", "id": new_tool_use_id(), "name": call.name,
                       "input": tool_input(call.arguments), "caller": DIRECT_CALLER})
    return blocks
