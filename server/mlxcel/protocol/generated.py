"""Generated text read back as API output: reasoning, content and tool calls (shared by
the adapters that render structured output items or blocks)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..chat.reasoning import split_reasoning
from ..chat.tool_calls import ParsedToolCall, extract_tool_calls
from ..engine.model import LoadedModel


@dataclass(frozen=True)
class ParsedOutput:
    reasoning: str | None
    content: str
    calls: list[ParsedToolCall]


def _whole_object(arguments: str) -> bool:
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


def parse_output(
    model: LoadedModel, text: str, tools: list[dict[str, Any]] | None, opens_reasoning: bool
) -> ParsedOutput:
    """Reasoning, content and calls of a finished generation. Responses and Messages read
    their output whole in both modes, so a call cut by the token limit is kept only when its
    arguments are a whole object: a stored item must be valid input for the next turn."""
    reasoning, content = split_reasoning(model, text, opens_reasoning)
    calls: list[ParsedToolCall] = []
    if tools:
        content, calls = extract_tool_calls(model, content, tools)
        calls = [call for call in calls if _whole_object(call.arguments)]
    return ParsedOutput(reasoning, content, calls)
