"""Generated text read back as API output: reasoning, content and tool calls (shared by
the adapters that render structured output items or blocks)."""

from __future__ import annotations

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


def parse_output(
    model: LoadedModel, text: str, tools: list[dict[str, Any]] | None, opens_reasoning: bool
) -> ParsedOutput:
    reasoning, content = split_reasoning(model, text, opens_reasoning)
    calls: list[ParsedToolCall] = []
    if tools:
        content, calls = extract_tool_calls(model, content, tools)
    return ParsedOutput(reasoning, content, calls)
