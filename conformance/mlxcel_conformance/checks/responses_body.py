"""Checks on the OpenAI Responses `response` object (`response_body`): the non-streaming body,
and the `response` carried by the terminal event of a stream.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mlxcel_conformance.checks.openai_common import is_int, is_number
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

NAME = "response_body"
STATUSES = frozenset({"completed", "incomplete", "failed", "in_progress", "queued", "cancelled"})
# Required by OpenAI's published schema; the SDK's strict validation rejects bodies without them.
REQUIRED_KEYS = (
    "instructions",
    "tools",
    "parallel_tool_calls",
    "metadata",
    "tool_choice",
    "temperature",
    "top_p",
)


def _check_usage(usage: Any, body: Mapping[str, Any]) -> None:
    if usage is None:
        return
    counts = {k: usage.get(k) for k in ("input_tokens", "output_tokens", "total_tokens")}
    if not all(is_int(v) and v >= 0 for v in counts.values()):
        fail(
            NAME, "usage needs integer input_tokens, output_tokens, total_tokens >= 0", usage=usage
        )
    if counts["input_tokens"] + counts["output_tokens"] != counts["total_tokens"]:
        fail(NAME, "usage: input_tokens + output_tokens != total_tokens", usage=usage)


def _check_message(position: int, item: Mapping[str, Any]) -> None:
    if item.get("role") != "assistant" or not isinstance(item.get("content"), list):
        fail(
            NAME,
            f"output[{position}]: a message needs role 'assistant' and a content list",
            item=item,
        )
    for part in item["content"]:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "output_text":
            ok = isinstance(part.get("text"), str) and isinstance(part.get("annotations"), list)
        elif kind == "refusal":
            ok = isinstance(part.get("refusal"), str)
        else:
            ok = False
        if not ok:
            fail(NAME, f"output[{position}]: content part {kind!r} is malformed", part=part)


def _check_function_call(position: int, item: Mapping[str, Any]) -> None:
    ok = isinstance(item.get("call_id"), str) and isinstance(item.get("name"), str)
    try:
        arguments = json.loads(item.get("arguments", ""))
    except (TypeError, ValueError):
        arguments = None
    if not ok or not isinstance(arguments, dict):
        fail(
            NAME,
            f"output[{position}]: a function_call needs call_id, name and JSON-object arguments",
            item=item,
        )


# A Response without keys the spec requires, whichever keys a check or an SDK met first: one
# defect (the SDK's validation error names it so too: sdk_clients.schema_form).
RESPONSE_LACKS_KEYS = "schema: the Response object lacks properties the spec requires"


@check(
    NAME,
    severity=Severity.HIGH,
    description="Responses `response` object: fields, status, output items, usage",
)
def check_response_body(body: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        fail(NAME, "the body is not a JSON object", body=body)
    if not (isinstance(body.get("id"), str) and body["id"]) or body.get("object") != "response":
        fail(NAME, "id must be a non-empty string and object 'response'", body=body)
    if not is_number(body.get("created_at")) or not isinstance(body.get("model"), str):
        fail(NAME, "created_at must be a number and model a string", body=body)
    if body.get("status") not in STATUSES:
        fail(NAME, f"status {body.get('status')!r} is not one of {sorted(STATUSES)}", body=body)
    for key in ("error", "incomplete_details"):
        if key not in body or not isinstance(body[key], (dict, type(None))):
            fail(NAME, f"{key} must be present, an object or null", body=body,
                 defect=RESPONSE_LACKS_KEYS if key not in body else None)
    missing = [key for key in REQUIRED_KEYS if key not in body]
    if missing:
        fail(NAME, f"required key(s) {missing} missing", severity=Severity.MEDIUM, body=body,
             defect=RESPONSE_LACKS_KEYS)
    output = body.get("output")
    if not isinstance(output, list):
        fail(NAME, "output is not a list", body=body)
    for position, item in enumerate(output):
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            fail(NAME, f"output[{position}] is not an object with a type", item=item)
        if item["type"] == "message":
            _check_message(position, item)
        elif item["type"] == "function_call":
            _check_function_call(position, item)
    _check_usage(body.get("usage"), body)
    return body


@check(
    "responses_usage_terminal",
    severity=Severity.MEDIUM,
    description="Responses streams carry `usage` only on the terminal response (null before)",
)
def check_responses_usage_terminal(payloads: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Return the terminal usage. OpenAI's schema types `usage` as non-null, so a usage object
    on `response.created`/`in_progress` is a made-up count; null or absent is what the real
    API and the strict SDK accept."""
    name = "responses_usage_terminal"
    terminal: dict[str, Any] | None = None
    for index, payload in enumerate(payloads):
        response = payload.get("response")
        if not isinstance(response, dict):
            continue
        usage = response.get("usage")
        if payload.get("type") in ("response.completed", "response.incomplete"):
            if not isinstance(usage, dict):
                fail(name, f"event {index} ({payload['type']}) has no usage object",
                     payload=payload)
            _check_usage(usage, response)
            terminal = usage
        elif usage is not None:
            fail(name, f"event {index} ({payload.get('type')}) carries usage before the end",
                 payload=payload)
    return terminal
