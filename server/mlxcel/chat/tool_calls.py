"""Tool calls in a finished generation: the format a model uses, and the parse.

Every API family reads its output through ``output.OutputSetup`` (the parser in
``stream_filter``); ``extract_tool_calls`` is the calls-only read of a finished text. Nothing
is parsed when the request sent no tools: markup is then ordinary text.

A template with no tool syntax of its own (SmolLM2's, say) still gets calls: they are written
and read in the generic JSON format (``{"name": ..., "arguments": {...}}`` as the whole reply),
as llama-server does for such templates (llama.cpp's ``docs/function-calling.md``, section
"Universal support w/ Native & Generic handlers"). A forced ``tool_choice`` binds that format by
its grammar, so every model answers a forced choice with a call.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from ..generation.model_view import ModelView
from .tool_formats import detect_format, load_format
from .tool_formats.base import ToolFormat


@dataclass(frozen=True)
class ParsedToolCall:
    id: str
    name: str
    arguments: str  # JSON text


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def template_tool_format(model: ModelView) -> ToolFormat | None:
    """The tool-call format the chat template itself renders; None when it has no tool syntax."""
    return detect_format(model.chat_template)


def tool_format_of(model: ModelView) -> ToolFormat:
    """The format calls are written and read in: the template's own, else generic JSON."""
    return template_tool_format(model) or load_format("generic_json")


def extract_tool_calls(
    model: ModelView, text: str, tools: list[dict[str, Any]] | None
) -> tuple[str, list[ParsedToolCall]]:
    """(content without tool-call markup, calls). No tools sent: ``(text, [])``."""
    if not tools:
        return text, []
    fmt = tool_format_of(model)
    from .stream_filter import ChatOutputParser

    parser = ChatOutputParser(tool_format=fmt, tools=tools)
    parser.feed(text)
    parser.finish()
    return parser.content, list(parser.calls)
