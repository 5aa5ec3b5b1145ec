"""An Anthropic Messages request translated for the engine: the prompt (with a forced
``tool_choice``'s instruction and grammar, and the thinking budget), its ``GenerationRequest``,
how the output is read; and the non-streamed message's content blocks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...chat.forcing import constrain
from ...chat.output import OutputSetup, ParsedOutput, output_setup
from ...chat.template import render_chat
from ...chat.thinking_budget import budget_factory
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...generation import GenerationRequest
from .messages_wire import (
    DIRECT_CALLER,
    MessagesRequest,
    chat_tools,
    forced_tool_choice,
    new_message_id,
    new_tool_use_id,
    template_messages,
    tool_input,
)


@dataclass(frozen=True)
class MessagesTurn:
    generation: GenerationRequest
    output: OutputSetup
    with_thinking: bool  # reasoning is sent as thinking blocks (else left out)


def to_messages_turn(body: MessagesRequest, model: LoadedModel,
                     defaults: GenerationDefaults) -> MessagesTurn:
    """Render the prompt and build the request (may read media: run it off the event loop)."""
    tools = chat_tools(body)
    messages, constraints = constrain(model, template_messages(body), tools,
                                      forced_tool_choice(body), None, body.max_tokens)
    rendered = render_chat(model, messages, tools=tools)
    output = output_setup(model, rendered.text, tools)
    budget = budget_factory(model, body.thinking_budget(), output.starts_in_reasoning,
                            output.reasoning)
    if budget is not None:
        constraints = (budget, *constraints)
    generation = GenerationRequest(
        prompt_tokens=tuple(rendered.tokens),
        max_tokens=body.max_tokens,
        sampling=body.sampling(defaults),
        stop=body.stop_strings(),
        logits_processor_factories=constraints,
        request_id=new_message_id(),
        vision=rendered.vision,
    )
    return MessagesTurn(generation, output, body.thinking_enabled)


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
