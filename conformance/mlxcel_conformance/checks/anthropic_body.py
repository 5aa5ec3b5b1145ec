"""Checks on the Anthropic Messages non-streaming body (`anthropic_message_body`); the same
shape is what `anthropic_event_order` assembles from a stream.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlxcel_conformance.checks.anthropic_events import STOP_REASONS
from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.checks.verdict_policy import VerdictClass
from mlxcel_conformance.errors import Severity

NAME = "anthropic_message_body"

# The fields each known block type must carry as strings (tool inputs are checked apart).
BLOCK_STRING_FIELDS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "thinking": ("thinking", "signature"),
    "redacted_thinking": ("data",),
    "tool_use": ("id", "name"),
    "server_tool_use": ("id", "name"),
}


# One defect in two forms: count_tokens disagreeing with the usage of the same prompt, as the
# route's check and the SDK's round trip find it.
COUNT_TOKENS_DEFECT = ("anthropic_count_tokens: count_tokens differs from the prompt tokens the "
                       "message's usage reports")


def missing_block_key(key: str) -> str:
    """The defect of a content block that lacks ``key``, as the schema check words it."""
    return f"schema: /content_block: '{key}' is a required property"


def _check_block(position: int, block: Any) -> None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        fail(NAME, f"content[{position}] is not an object with a type", block=block)
    for key in BLOCK_STRING_FIELDS.get(block["type"], ()):
        if not isinstance(block.get(key), str):
            # a key the block lacks is the schema's finding on the streamed block too (and an
            # SDK's): one defect (defects.py)
            fail(NAME, f"content[{position}] ({block['type']}): {key} is not a string", block=block,
                 defect=None if key in block else missing_block_key(key))
    if block["type"] in ("tool_use", "server_tool_use") and not isinstance(
        block.get("input"), dict
    ):
        fail(NAME, f"content[{position}]: tool input is not an object", block=block)


@check(
    NAME,
    severity=Severity.HIGH,
    description="Anthropic message body: id, type, role, content blocks, stop_reason, usage",
    verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED}),
)
def check_anthropic_message_body(body: Mapping[str, Any]) -> Mapping[str, Any]:
    if not isinstance(body, Mapping):
        fail(NAME, "the body is not a JSON object", body=body)
    ok = (
        isinstance(body.get("id"), str)
        and body.get("type") == "message"
        and body.get("role") == "assistant"
        and isinstance(body.get("model"), str)
    )
    if not ok:
        fail(NAME, "needs id, type 'message', role 'assistant' and model", body=body)
    content = body.get("content")
    if not isinstance(content, list):
        fail(NAME, "content is not a list", body=body)
    for position, block in enumerate(content):
        _check_block(position, block)
    if body.get("stop_reason") not in STOP_REASONS:
        fail(
            NAME,
            f"stop_reason {body.get('stop_reason')!r} is not one of {sorted(STOP_REASONS)}",
            body=body,
        )
    if not isinstance(body.get("stop_sequence", ...), (str, type(None))):
        fail(NAME, "stop_sequence must be present, a string or null", body=body)
    usage = body.get("usage")
    if not isinstance(usage, dict) or not all(
        is_int(usage.get(k)) and usage[k] >= 0 for k in ("input_tokens", "output_tokens")
    ):
        fail(NAME, "usage needs integer input_tokens and output_tokens >= 0", body=body)
    return body
