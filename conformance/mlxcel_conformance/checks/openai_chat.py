"""Checks on OpenAI Chat Completions: the `chat.completion.chunk` stream and the
`chat.completion` body.

Stream checks take the decoded chunk payloads returned by `sse_framing` (without `[DONE]`).
They stay tolerant of what the real service varies: extra keys (`obfuscation`, `service_tier`,
`system_fingerprint` present or not), `usage: null` on every chunk, `content: ""` or `null` in
the role chunk, content in the finish chunk.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mlxcel_conformance.checks.openai_common import is_int, validate_usage
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})

Chunks = Sequence[Mapping[str, Any]]


def _choices(chunk: Mapping[str, Any], name: str, index: int) -> list[dict[str, Any]]:
    choices = chunk.get("choices")
    if not isinstance(choices, list):
        fail(name, f"chunk {index} has no `choices` list", index=index, chunk=chunk)
    for choice in choices:
        if not isinstance(choice, dict) or not is_int(choice.get("index")):
            fail(name, f"chunk {index}: a choice without an integer `index`", chunk=chunk)
        if not isinstance(choice.get("delta"), dict):
            fail(
                name, f"chunk {index}: choice {choice['index']} has no `delta` object", chunk=chunk
            )
    return choices


@check(
    "chat_chunk_object",
    severity=Severity.HIGH,
    description='every chunk: object "chat.completion.chunk", one id/created/model for the stream',
)
def check_chat_chunk_object(chunks: Chunks) -> dict[str, Any]:
    """Return the stream's `{"id", "created", "model"}`."""
    if not chunks:
        fail("chat_chunk_object", "the stream has no chunks")
    first = chunks[0]
    identity = {key: first.get(key) for key in ("id", "created", "model")}
    types_ok = (
        isinstance(identity["id"], str)
        and bool(identity["id"])
        and is_int(identity["created"])
        and isinstance(identity["model"], str)
    )
    if not types_ok:
        fail(
            "chat_chunk_object",
            "chunk 0: id must be a non-empty string, created an integer, model a string",
            chunk=first,
        )
    for index, chunk in enumerate(chunks):
        if chunk.get("object") != "chat.completion.chunk":
            fail(
                "chat_chunk_object",
                f"chunk {index}: object is {chunk.get('object')!r}, not 'chat.completion.chunk'",
                index=index,
                chunk=chunk,
            )
        changed = {k: chunk.get(k) for k, v in identity.items() if chunk.get(k) != v}
        if changed:
            fail(
                "chat_chunk_object",
                f"chunk {index} changes {sorted(changed)} within one stream",
                index=index,
                expected=identity,
                got=changed,
            )
    return identity


@check(
    "chat_first_chunk_role",
    severity=Severity.HIGH,
    description='the first chunk of each choice carries delta.role "assistant"',
)
def check_chat_first_chunk_role(chunks: Chunks) -> None:
    seen: set[int] = set()
    for index, chunk in enumerate(chunks):
        for choice in _choices(chunk, "chat_first_chunk_role", index):
            if choice["index"] in seen:
                continue
            seen.add(choice["index"])
            role = choice["delta"].get("role")
            if role != "assistant":
                fail(
                    "chat_first_chunk_role",
                    f"the first delta of choice {choice['index']} has role {role!r}, "
                    "not 'assistant'",
                    index=index,
                    chunk=chunk,
                )


def _check_delta(delta: Mapping[str, Any], index: int, chunk: Mapping[str, Any]) -> None:
    role = delta.get("role")
    if role is not None and role != "assistant":
        fail("chat_chunk_order", f"chunk {index}: delta.role {role!r}", index=index, chunk=chunk)
    content = delta.get("content")
    if content is not None and not isinstance(content, str):
        fail(
            "chat_chunk_order",
            f"chunk {index}: delta.content is not a string",
            index=index,
            chunk=chunk,
        )
    tool_calls = delta.get("tool_calls")
    if tool_calls is not None and not isinstance(tool_calls, list):
        fail(
            "chat_chunk_order",
            f"chunk {index}: delta.tool_calls is not a list",
            index=index,
            chunk=chunk,
        )


@check(
    "chat_chunk_order",
    severity=Severity.CRITICAL,
    description="per choice: deltas, then exactly one finish_reason chunk, then nothing",
)
def check_chat_chunk_order(chunks: Chunks) -> dict[int, str]:
    """Return the finish_reason of each choice index."""
    finished: dict[int, str] = {}
    seen: set[int] = set()
    for index, chunk in enumerate(chunks):
        for choice in _choices(chunk, "chat_chunk_order", index):
            number = choice["index"]
            seen.add(number)
            if number in finished:
                fail(
                    "chat_chunk_order",
                    f"chunk {index}: choice {number} continues after its finish_reason chunk",
                    index=index,
                    chunk=chunk,
                )
            _check_delta(choice["delta"], index, chunk)
            reason = choice.get("finish_reason")
            if reason is None:
                continue
            if reason not in FINISH_REASONS:
                fail(
                    "chat_chunk_order",
                    f"chunk {index}: finish_reason {reason!r} is not one of "
                    f"{sorted(FINISH_REASONS)}",
                    index=index,
                    chunk=chunk,
                )
            finished[number] = reason
    if seen != set(range(len(seen))):
        fail("chat_chunk_order", f"choice indexes {sorted(seen)} are not 0..n-1")
    unfinished = sorted(seen - set(finished))
    if unfinished:
        fail(
            "chat_chunk_order",
            f"choice(s) {unfinished} never received a finish_reason",
            last_chunk=chunks[-1] if chunks else None,
        )
    return finished


def _tool_call_delta_first(call: Mapping[str, Any], where: str) -> None:
    function = call.get("function")
    ok = (
        isinstance(call.get("id"), str)
        and bool(call["id"])
        and call.get("type") == "function"
        and isinstance(function, dict)
        and isinstance(function.get("name"), str)
        and bool(function["name"])
    )
    if not ok:
        fail(
            "tool_call_deltas",
            f"{where}: the first delta of a tool call needs id, type 'function' and function.name",
            delta=call,
        )


def _tool_call_delta_later(call: Mapping[str, Any], where: str) -> None:
    # the OpenAI SDK concatenates string fields across deltas: a repeated id or name corrupts them
    function = call.get("function") or {}
    if call.get("id") or (isinstance(function, dict) and function.get("name")):
        fail(
            "tool_call_deltas",
            f"{where}: a later delta repeats id or function.name (clients concatenate them)",
            delta=call,
        )
    if call.get("type") not in (None, "function"):
        fail("tool_call_deltas", f"{where}: type {call.get('type')!r}", delta=call)


@check(
    "tool_call_deltas",
    severity=Severity.CRITICAL,
    description="tool call deltas: id/type/name first, then argument fragments forming JSON",
)
def check_tool_call_deltas(chunks: Chunks) -> dict[int, list[dict[str, Any]]]:
    """Return the assembled tool calls of each choice, in the non-streaming shape."""
    calls: dict[int, list[dict[str, Any]]] = {}
    for index, chunk in enumerate(chunks):
        for choice in _choices(chunk, "tool_call_deltas", index):
            assembled = calls.setdefault(choice["index"], [])
            for call in choice["delta"].get("tool_calls") or []:
                where = f"chunk {index}, choice {choice['index']}"
                position = call.get("index") if isinstance(call, dict) else None
                if not is_int(position) or position > len(assembled):
                    fail(
                        "tool_call_deltas",
                        f"{where}: tool call index {position!r} is not the current or next index",
                        delta=call,
                        open_calls=len(assembled),
                    )
                if position == len(assembled):
                    _tool_call_delta_first(call, where)
                    assembled.append(
                        {
                            "id": call["id"],
                            "type": "function",
                            "function": {"name": call["function"]["name"], "arguments": ""},
                        }
                    )
                else:
                    _tool_call_delta_later(call, where)
                fragment = (call.get("function") or {}).get("arguments")
                if fragment is None:
                    continue
                if not isinstance(fragment, str):
                    fail("tool_call_deltas", f"{where}: arguments is not a string", delta=call)
                assembled[position]["function"]["arguments"] += fragment
    for choice_index, assembled in calls.items():
        for call in assembled:
            _arguments_object("tool_call_deltas", call, choice=choice_index)
    return {k: v for k, v in calls.items() if v}


def _arguments_object(name: str, call: Mapping[str, Any], **where: Any) -> Any:
    arguments = call["function"].get("arguments")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        fail(name, "tool call arguments are not a JSON object string", call=call, **where)
    return parsed


@check(
    "chat_completion_body",
    severity=Severity.HIGH,
    description="non-streaming chat.completion body: fields, types, finish_reason, usage",
)
def check_chat_completion_body(body: Mapping[str, Any]) -> Mapping[str, Any]:
    name = "chat_completion_body"
    if not isinstance(body, Mapping):
        fail(name, "the body is not a JSON object", body=body)
    if not (isinstance(body.get("id"), str) and body["id"]):
        fail(name, "id is not a non-empty string", body=body)
    if body.get("object") != "chat.completion":
        fail(name, f"object is {body.get('object')!r}, not 'chat.completion'", body=body)
    if not is_int(body.get("created")) or not isinstance(body.get("model"), str):
        fail(name, "created must be an integer and model a string", body=body)
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        fail(name, "choices is not a non-empty list", body=body)
    for position, choice in enumerate(choices):
        _check_body_choice(choice, position)
    if "usage" in body and body["usage"] is not None:
        validate_usage(name, body["usage"])
    return body


def _check_body_choice(choice: Any, position: int) -> None:
    name = "chat_completion_body"
    if not isinstance(choice, dict) or choice.get("index") != position:
        fail(name, f"choices[{position}] has index != {position}", choice=choice)
    message = choice.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        fail(name, f"choices[{position}].message.role is not 'assistant'", choice=choice)
    if "content" not in message or not isinstance(message["content"], (str, type(None))):
        fail(name, f"choices[{position}].message.content is not a string or null", choice=choice)
    if choice.get("finish_reason") not in FINISH_REASONS:
        fail(
            name,
            f"choices[{position}].finish_reason {choice.get('finish_reason')!r} is invalid",
            choice=choice,
        )
    if "logprobs" not in choice:
        fail(
            name,
            f"choices[{position}] lacks the `logprobs` key (null is fine)",
            severity=Severity.MEDIUM,
            choice=choice,
        )
    for call in message.get("tool_calls") or []:
        ok = (
            isinstance(call, dict)
            and isinstance(call.get("id"), str)
            and call.get("type") == "function"
            and isinstance(call.get("function"), dict)
            and isinstance(call["function"].get("name"), str)
        )
        if not ok:
            fail(name, "a tool call needs id, type 'function' and function.name", call=call)
        _arguments_object(name, call, choice=position)
