"""Responses API input items → chat-template messages, and output items → history messages.

Input is a string (one user message) or a list of items: messages (``type: "message"``, or no
type and a ``role``) whose content is a string or parts (``input_text``; ``output_text`` and
``refusal`` when an assistant turn is replayed), ``function_call`` and
``function_call_output`` items, and ``reasoning`` items (accepted, carried as the next
assistant turn's reasoning). Anything the text-only model cannot read is a 400 naming it.
"""

from __future__ import annotations

import json
from typing import Any

from ...chat.multimodal import image_part
from ...errors import InvalidRequestError
from .compaction import decode_capsule, summary_message

MESSAGE_ROLES = ("user", "system", "developer", "assistant")
TEXT_PARTS = ("input_text", "output_text", "text")
MEDIA_PARTS = ("input_image", "input_audio", "image_url")


def _bad(message: str, param: str) -> InvalidRequestError:
    return InvalidRequestError(message, param=param)


def _part_text(part: Any, role: str, param: str) -> str:
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        raise _bad(f"{param} must be an object with a string type.", param)
    kind = part["type"]
    if kind in TEXT_PARTS and isinstance(part.get("text"), str):
        return str(part["text"])
    if kind == "refusal" and role == "assistant" and isinstance(part.get("refusal"), str):
        return str(part["refusal"])
    if kind == "input_file":
        raise _bad(f"{param}: input_file parts are not supported by this server.", param)
    raise _bad(f"{param}: unsupported content part type {kind!r} for role {role!r}.", param)


def _media_part(part: dict[str, Any], param: str) -> dict[str, Any]:
    """A Responses media part as the neutral part chat/multimodal.py reads."""
    if part["type"] == "input_audio":
        return {"type": "audio", "param": param}
    value = part.get("image_url")
    if isinstance(value, dict):  # the chat shape, {"url": ...}
        value = value.get("url")
    if value is None and part.get("file_id") is not None:
        raise _bad(f"{param}: input_image by file_id is not supported by this server; send "
                   "image_url.", param)
    return image_part(value, param)


def content_text(content: Any, role: str, param: str) -> str | list[dict[str, Any]]:
    """A message's content (string or parts) as one text; with media parts, the neutral
    parts list (text parts as ``{"type": "text"}``)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _bad(f"{param} must be a string or an array of content parts.", param)
    parts: list[dict[str, Any]] = []
    for i, part in enumerate(content):
        where = f"{param}.{i}"
        if isinstance(part, dict) and part.get("type") in MEDIA_PARTS:
            parts.append(_media_part(part, where))
        else:
            parts.append({"type": "text", "text": _part_text(part, role, where)})
    if any(p["type"] != "text" for p in parts):
        return parts
    return "".join(p["text"] for p in parts)


def _message(item: dict[str, Any], param: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in MESSAGE_ROLES:
        raise _bad(f"{param}.role must be one of {', '.join(MESSAGE_ROLES)}.", f"{param}.role")
    text = content_text(item.get("content"), role, f"{param}.content")
    return {"role": "system" if role == "developer" else role, "content": text}


def _function_call(item: dict[str, Any], param: str, own: bool = False) -> dict[str, Any]:
    """A function call of the input; ``own``: of this server's output, whose arguments may be
    cut by ``max_output_tokens`` (not JSON, kept as their text) and are no client's fault."""
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments")
    if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(arguments, str)):
        raise _bad(f"{param}: a function_call needs string call_id, name and arguments.", param)
    try:
        parsed: Any = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        if not own:
            raise _bad(f"{param}.arguments is not valid JSON.", f"{param}.arguments") from None
        parsed = arguments
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": parsed}}


def _function_output(item: dict[str, Any], param: str) -> dict[str, Any]:
    call_id, output = item.get("call_id"), item.get("output")
    if not isinstance(call_id, str):
        raise _bad(f"{param}.call_id must be a string.", f"{param}.call_id")
    text = content_text(output, "tool", f"{param}.output")
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = item.get("content") or item.get("summary") or []
    return "".join(p.get("text", "") for p in parts if isinstance(p, dict))


class _Builder:
    """Accumulates messages; consecutive function calls join one assistant turn."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.pending_reasoning: str | None = None

    def assistant_turn(self) -> dict[str, Any]:
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == "assistant" and "tool_calls" in last:
            return last
        turn: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": []}
        self._attach_reasoning(turn)
        self.messages.append(turn)
        return turn

    def add(self, message: dict[str, Any]) -> None:
        if message["role"] == "assistant":
            self._attach_reasoning(message)
        self.messages.append(message)

    def _attach_reasoning(self, message: dict[str, Any]) -> None:
        if self.pending_reasoning:
            message["reasoning_content"] = self.pending_reasoning
        self.pending_reasoning = None


def input_messages(items: str | list[Any], param: str = "input") -> list[dict[str, Any]]:
    """Chat-template messages for ``input``. A ``compaction`` item replays as its summary,
    followed by its retained turns unless the input repeats them right after it."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("type") == "compaction":
            capsule = decode_capsule(item.get("encrypted_content"), f"{param}.{i}")
            before = _convert(items[:i], param)
            after = input_messages(items[i + 1 :], param)
            retained = input_messages(capsule.retained, f"{param}.{i}.retained")
            replay = [] if after[: len(retained)] == retained else retained
            return before + [summary_message(capsule.summary)] + replay + after
    return _convert(items, param)


def _convert(items: list[Any], param: str, own: bool = False) -> list[dict[str, Any]]:
    builder = _Builder()
    for i, item in enumerate(items):
        where = f"{param}.{i}"
        if not isinstance(item, dict):
            raise _bad(f"{where} must be an object.", where)
        kind = item.get("type", "message" if "role" in item else None)
        if kind == "message":
            builder.add(_message(item, where))
        elif kind == "function_call":
            builder.assistant_turn()["tool_calls"].append(_function_call(item, where, own))
        elif kind == "function_call_output":
            builder.add(_function_output(item, where))
        elif kind == "reasoning":
            builder.pending_reasoning = _reasoning_text(item) or None
        elif kind == "input_file":
            raise _bad(f"{where}: input_file items are not supported by this server.", where)
        else:
            raise _bad(f"{where}: unsupported input item type {kind!r}.", f"{where}.type")
    return builder.messages


def output_messages(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The assistant turn a response's output items amount to, for the next request (a
    function call cut by ``max_output_tokens`` keeps its arguments as text: storing a response
    once failed on it, and broke its stream after the last event)."""
    return _convert([item for item in output if item.get("type") != "compaction"], "output",
                    own=True)
