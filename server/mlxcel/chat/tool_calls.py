"""Tool calls in a finished generation: the format a model uses, and the parse.

Every API family reads its output through ``output.OutputSetup`` (the parser in
``stream_filter``); ``extract_tool_calls`` is the calls-only read of a finished text. Nothing
is parsed when the request sent no tools: markup is then ordinary text.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ..generation.model import ModelView
from .tool_formats import detect_format
from .tool_formats.base import ToolFormat


@dataclass(frozen=True)
class ParsedToolCall:
    id: str
    name: str
    arguments: str  # JSON text


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def tool_format_of(model: ModelView) -> ToolFormat | None:
    return detect_format(model.chat_template)


def extract_tool_calls(
    model: ModelView, text: str, tools: list[dict[str, Any]] | None
) -> tuple[str, list[ParsedToolCall]]:
    """(content without tool-call markup, calls). No tools sent: ``(text, [])``."""
    fmt = tool_format_of(model)
    if not tools or fmt is None:
        return text, []
    from .stream_filter import ChatOutputParser

    parser = ChatOutputParser(tool_format=fmt, tools=tools)
    parser.feed(text)
    parser.finish()
    return parser.content, list(parser.calls)
