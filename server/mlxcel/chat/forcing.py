"""A forced tool choice or a constraining output format, for the API families that are not
chat completions (Responses, Anthropic Messages): the same rules as chat, reached through a
chat-style ``tool_choice``.

Returns the messages with the forced-choice instruction placed (first system message, else the
last user message, else a new leading system message) and the logits-processor factories that
bind the output: a grammar built from the tool schemas for a forced call on a JSON-wire format,
or the JSON schema of the requested format.
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidRequestError
from ..generation import LogitsProcessorFactory
from ..generation.model_view import ModelView
from ..structured.response_format import is_constraining, response_format_factories
from .forced_choice import forced_call_factories
from .tool_calls import tool_format_of
from .tool_choice import place_instruction, plan_tools, validate_tools


def is_forced(tools: list[dict[str, Any]] | None, chat_tool_choice: Any) -> bool:
    return bool(tools) and (chat_tool_choice == "required" or isinstance(chat_tool_choice, dict))


def instructed_messages(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, chat_tool_choice: Any
) -> list[dict[str, Any]]:
    """The messages as the template will see them: with the forced-choice instruction placed,
    exactly as ``constrain`` places it (token counting must see the same prompt)."""
    validate_tools(tools)
    if not is_forced(tools, chat_tool_choice):
        return messages
    return place_instruction(messages, plan_tools(tools, chat_tool_choice).instruction)


def constrain(
    model: ModelView,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    chat_tool_choice: Any,
    response_format: dict[str, Any] | None,
    max_tokens: int,
    *,
    param: str = "tool_choice",
) -> tuple[list[dict[str, Any]], tuple[LogitsProcessorFactory, ...]]:
    """(messages with the instruction placed, factories) for a chat-style ``tool_choice``."""
    validate_tools(tools)
    if not is_forced(tools, chat_tool_choice):
        return messages, response_format_factories(model, response_format)
    if is_constraining(response_format):
        raise InvalidRequestError(
            "A forced tool choice cannot be combined with a constraining output format.",
            param=param,
        )
    plan = plan_tools(tools, chat_tool_choice)
    placed = place_instruction(messages, plan.instruction)
    if not plan.tools:
        return placed, ()
    return placed, forced_call_factories(model, tool_format_of(model), plan.tools,
                                         max_tokens)
