"""How one generation's output is read, decided once per request from the model and its
rendered prompt: the tool-call format (when tools were sent), the reasoning markers, and
whether the prompt already opened a reasoning block. Every API family builds its parser here,
so Chat, Responses and Messages split reasoning and stream tool calls alike."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..generation.model_view import ModelView
from .reasoning import ReasoningMarkers, prompt_opens_reasoning, reasoning_markers
from .stream_filter import ChatOutputParser
from .tool_calls import ParsedToolCall, new_call_id, tool_format_of
from .tool_formats.base import ToolFormat


@dataclass(frozen=True)
class OutputSetup:
    tool_format: ToolFormat | None
    tools: list[dict[str, Any]] | None
    reasoning: ReasoningMarkers | None
    starts_in_reasoning: bool

    def new_parser(self, request_id: str = "",
                   id_factory: Callable[[], str] = new_call_id) -> ChatOutputParser:
        return ChatOutputParser(tool_format=self.tool_format, tools=self.tools,
                                reasoning=self.reasoning,
                                starts_in_reasoning=self.starts_in_reasoning,
                                request_id=request_id, id_factory=id_factory)


def output_setup(model: ModelView, prompt_text: str,
                 tools: list[dict[str, Any]] | None) -> OutputSetup:
    markers = reasoning_markers(model)
    fmt = tool_format_of(model) if tools else None
    return OutputSetup(fmt, tools, markers, prompt_opens_reasoning(prompt_text, markers))


def whole_object(arguments: str) -> bool:
    """Whether a call's arguments are a whole JSON object (not cut by the token limit)."""
    try:
        return isinstance(json.loads(arguments), dict)
    except ValueError:
        return False


@dataclass(frozen=True)
class ParsedOutput:
    reasoning: str | None
    content: str
    calls: list[ParsedToolCall]


def read_output(setup: OutputSetup, text: str) -> ParsedOutput:
    """Reasoning, content and calls of a finished generation, read whole. A call cut by the
    token limit is kept only when its arguments are a whole object: a stored item or block must
    be valid input for the next turn."""
    parser = setup.new_parser()
    parser.feed(text)
    parser.finish()
    calls = [call for call in parser.calls if whole_object(call.arguments)]
    return ParsedOutput(parser.reasoning, parser.content, calls)
