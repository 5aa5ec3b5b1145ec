"""Compaction of a Responses history: where it may be split, the capsule that carries the
summary, and turning messages back into input items.

Rules (from the reference): system and developer messages are always kept; the retained part
is the latest user message plus the newest whole turns within ``keep_tokens``; a split falls
only before a user turn or after a completed tool group, so a function call never loses its
output. The ``compaction`` item's ``encrypted_content`` is a base64url capsule (not encrypted)
of ``{"summary", "retained"}``.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...errors import InvalidRequestError
from ...generation import GenerationRequest, SamplingParams

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
SUMMARY_INSTRUCTIONS = (
    "Summarize the conversation below in a few sentences. Keep every fact, name, number, "
    "decision and open question a continuation would need. Reply with the summary only."
)
KEEP_TOKENS_CAP = 8192
MAX_SUMMARY_TOKENS = 16384
DEFAULT_SUMMARY_TOKENS = 1024


@dataclass(frozen=True)
class Capsule:
    summary: str
    retained: list[dict[str, Any]]  # input items


def encode_capsule(capsule: Capsule) -> str:
    raw = json.dumps({"summary": capsule.summary, "retained": capsule.retained},
                     ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_capsule(text: Any, param: str) -> Capsule:
    try:
        padded = str(text) + "=" * (-len(str(text)) % 4)
        data = json.loads(base64.urlsafe_b64decode(padded.encode()))
        summary, retained = data["summary"], data["retained"]
        if isinstance(summary, str) and isinstance(retained, list):
            return Capsule(summary, retained)
    except (binascii.Error, ValueError, KeyError, TypeError, UnicodeDecodeError):
        pass
    raise InvalidRequestError(f"{param}.encrypted_content is not a compaction capsule.",
                              param=f"{param}.encrypted_content")


def summary_message(summary: str) -> dict[str, Any]:
    return {"role": "user", "content": SUMMARY_PREFIX + summary}


def split_points(messages: list[dict[str, Any]]) -> list[int]:
    """Indexes where a retained tail may start: before a user turn, or right after a tool
    group whose calls all have their outputs."""
    points = []
    for i, message in enumerate(messages):
        previous = messages[i - 1] if i else None
        if message["role"] == "user":
            points.append(i)
        elif previous is not None and previous["role"] == "tool" and message["role"] != "tool":
            points.append(i)
    return points


def choose_split(messages: list[dict[str, Any]], keep_tokens: int,
                 count: Callable[[list[dict[str, Any]]], int]) -> int | None:
    """Where the retained tail starts (None when there is no user message): the latest user
    message, extended back over whole turns while the tail stays within ``keep_tokens``."""
    points = split_points(messages)
    users = [i for i in points if messages[i]["role"] == "user"]
    if not users:
        return None
    start = users[-1]
    for point in reversed([p for p in points if p < start]):
        if count(messages[point:]) > keep_tokens:
            break
        start = point
    return start


def summary_request(prompt: list[int], summary_tokens: int | None, context: int,
                    request_id: str) -> GenerationRequest:
    """The greedy generation that writes the summary, within what the context leaves."""
    return GenerationRequest(
        prompt_tokens=tuple(prompt),
        max_tokens=min(summary_tokens or DEFAULT_SUMMARY_TOKENS, context - len(prompt)),
        sampling=SamplingParams(temperature=0.0),
        request_id=request_id,
    )


def transcript(messages: list[dict[str, Any]]) -> str:
    """The turns to summarize as plain text (tool calls and results included)."""
    lines = []
    for message in messages:
        text = str(message.get("content") or "")
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            arguments = function.get("arguments")
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments, ensure_ascii=False)
            text += f"\n[call {function.get('name')}({arguments})]"
        lines.append(f"{message['role'].upper()}: {text.strip()}")
    return "\n".join(lines)


def _item_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def messages_to_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-template messages back to Responses input items (for output and capsules)."""
    items: list[dict[str, Any]] = []
    for message in messages:
        role, text = message["role"], str(message.get("content") or "")
        if role == "tool":
            items.append({"id": _item_id("fco"), "type": "function_call_output",
                          "status": "completed", "call_id": message["tool_call_id"],
                          "output": text})
            continue
        if role == "assistant":
            if text:
                items.append({"id": _item_id("msg"), "type": "message", "role": "assistant",
                              "status": "completed",
                              "content": [{"type": "output_text", "text": text,
                                           "annotations": []}]})
            for call in message.get("tool_calls") or []:
                function = call["function"]
                arguments = function["arguments"]
                if not isinstance(arguments, str):
                    arguments = json.dumps(arguments, ensure_ascii=False)
                items.append({"id": _item_id("fc"), "type": "function_call",
                              "status": "completed", "call_id": call["id"],
                              "name": function["name"], "arguments": arguments})
            continue
        items.append({"id": _item_id("msg"), "type": "message", "role": role,
                      "status": "completed", "content": [{"type": "input_text", "text": text}]})
    return items
