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

from ...chat.continuation import prefilled_field
from ...chat.output import OutputSetup, ParsedOutput
from ...chat.turn import TurnRequest, TurnSettings, build
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...generation import GenerationRequest
from .messages_wire import (
    DIRECT_CALLER,
    CountTokensRequest,
    MessagesRequest,
    chat_tool_choice,
    chat_tools,
    new_message_id,
    new_tool_use_id,
    template_messages,
    thinking_switch,
    tool_input,
)


@dataclass(frozen=True)
class MessagesTurn:
    generation: GenerationRequest
    output: OutputSetup
    with_thinking: bool  # reasoning is sent as thinking blocks (else left out)


def messages_turn(body: MessagesRequest | CountTokensRequest, max_tokens: int,
                  thinking_budget: int | None = None) -> TurnRequest:
    """A Messages body (or its count_tokens body) as the family-neutral turn."""
    messages = template_messages(body)
    return TurnRequest(
        messages=messages,
        max_tokens=max_tokens,
        tools=chat_tools(body),
        tool_choice=chat_tool_choice(body),
        thinking=thinking_switch(body.thinking),
        thinking_budget=thinking_budget,
        continue_final=prefilled_field(messages),
    )


def to_messages_turn(body: MessagesRequest, model: LoadedModel, defaults: GenerationDefaults,
                     settings: TurnSettings | None = None) -> MessagesTurn:
    """Render the prompt and build the request (may read media: run it off the event loop)."""
    turn = build(messages_turn(body, body.max_tokens, body.thinking_budget()), model,
                 settings or TurnSettings())
    generation = GenerationRequest(
        prompt_tokens=tuple(turn.prompt.tokens),
        max_tokens=body.max_tokens,
        sampling=body.sampling(defaults),
        stop=body.stop_strings(),
        logits_processor_factories=turn.constraints,
        request_id=new_message_id(),
        vision=turn.prompt.vision,
    )
    return MessagesTurn(generation, turn.output, body.thinking_enabled)


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
