"""Tool calls in generated text (placeholder: Hermes/Qwen ``<tool_call>{json}</tool_call>``).

The chat-semantics branch owns the full version (every wire format, streaming filters); this
minimal module has the same signature so the Responses and Anthropic adapters can use it now.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass
from typing import Any

from ..engine.model import LoadedModel

_HERMES = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


@dataclass(frozen=True)
class ParsedToolCall:
    id: str
    name: str
    arguments: str  # JSON text of an object


def _parse_one(body: str, allowed: set[str] | None) -> ParsedToolCall | None:
    try:
        data: Any = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    if allowed is not None and data["name"] not in allowed:
        return None
    arguments = data.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return None
    if not isinstance(arguments, dict):
        return None
    text = json.dumps(arguments, ensure_ascii=False)
    return ParsedToolCall("call_" + uuid.uuid4().hex[:24], data["name"], text)


def _tool_names(tools: list[dict[str, Any]] | None) -> set[str] | None:
    if not tools:
        return None
    names = set()
    for tool in tools:
        function = tool.get("function", tool)
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.add(function["name"])
    return names or None


def extract_tool_calls(
    model: LoadedModel, text: str, tools: list[dict[str, Any]] | None
) -> tuple[str, list[ParsedToolCall]]:
    """The content left once every well-formed call is cut out, and the calls in order.

    A ``<tool_call>`` block that does not parse (or names an undeclared tool) stays in the
    content, so nothing the model wrote is lost.
    """
    del model  # every model is read as Hermes until the chat branch's registry lands
    allowed = _tool_names(tools)
    calls: list[ParsedToolCall] = []
    kept: list[str] = []
    position = 0
    for match in _HERMES.finditer(text):
        call = _parse_one(match.group(1), allowed)
        if call is None:
            continue
        kept.append(text[position : match.start()])
        position = match.end()
        calls.append(call)
    kept.append(text[position:])
    return "".join(kept).strip() if calls else text, calls
