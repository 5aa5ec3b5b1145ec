"""Checks on what a chat answer means, beyond its shape: tool calls, reasoning, forced tool
choice and structured output.

They take parsed bodies or the tool calls assembled by `tool_call_deltas`, so a streamed and a
non-streamed answer go through the same checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from mlxcel_conformance.checks.registry import check, fail, inconclusive
from mlxcel_conformance.checks.verdict_policy import VerdictClass
from mlxcel_conformance.errors import Severity

# Model-internal markup of the tool-call and reasoning formats a server must never leak.
MARKUP = (
    "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function=",
    "<think>", "</think>", "<|tool_call_start|>", "<|tool_calls_section_begin|>",
)


@check("tool_markup_hidden", severity=Severity.HIGH,
       description="with tools sent, tool-call and reasoning markup never appears in content")
def check_tool_markup_hidden(content: str | None) -> None:
    for marker in MARKUP:
        if content and marker in content:
            fail("tool_markup_hidden", f"content carries the marker {marker!r}", content=content)


@check("tool_calls_finish_reason", severity=Severity.CRITICAL,
       description="finish_reason is tool_calls exactly when the answer carries tool calls",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED}))
def check_tool_calls_finish_reason(finish_reason: str | None,
                                   calls: Sequence[Mapping[str, Any]]) -> None:
    if calls and finish_reason not in ("tool_calls", "length"):
        fail("tool_calls_finish_reason",
             f"{len(calls)} tool call(s) but finish_reason {finish_reason!r}", calls=list(calls))
    if finish_reason == "tool_calls" and not calls:
        fail("tool_calls_finish_reason", "finish_reason tool_calls with no tool call")


def _tool_schemas(tools: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}


@check("tool_call_declared", severity=Severity.CRITICAL,
       description="every call names a declared (or the forced) function with schema-valid "
       "JSON arguments",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED, VerdictClass.INCONCLUSIVE}))
def check_tool_call_declared(calls: Sequence[Mapping[str, Any]],
                             tools: Sequence[Mapping[str, Any]],
                             forced: str | None = None) -> None:
    schemas = _tool_schemas(tools)
    for call in calls:
        function = call.get("function") or {}
        name = function.get("name")
        if name not in schemas or (forced is not None and name != forced):
            fail("tool_call_declared", f"call to {name!r}; declared {sorted(schemas)}, "
                 f"forced {forced!r}", call=dict(call))
        try:
            arguments = json.loads(function.get("arguments") or "")
        except ValueError:
            fail("tool_call_declared", "arguments are not JSON", call=dict(call))
        errors = sorted(jsonschema.Draft202012Validator(schemas[name]).iter_errors(arguments),
                        key=str)
        if errors:
            fail("tool_call_declared", f"arguments break the tool schema: {errors[0].message}",
                 call=dict(call))


# The reasoning channel's documented names: `reasoning_content` (DeepSeek's API, llama-server's
# README, the reference) and `reasoning` (mlx-lm's SERVER.md, vLLM's docs).
REASONING_FIELDS = ("reasoning_content", "reasoning")


def reasoning_field(message: Mapping[str, Any]) -> str | None:
    """The field a server puts its reasoning in, if any."""
    return next((name for name in REASONING_FIELDS if message.get(name)), None)


@check("reasoning_split", severity=Severity.MEDIUM,
       description="a <think> block goes to the reasoning field, never into content")
def check_reasoning_split(message: Mapping[str, Any]) -> str:
    content = message.get("content") or ""
    if "<think>" in content or "</think>" in content:
        fail("reasoning_split", "content carries <think> markup", answer=dict(message))
    field = reasoning_field(message)
    reasoning = message.get(field) if field else None
    if not isinstance(reasoning, str) or not reasoning:
        fail("reasoning_split", "no reasoning_content (or reasoning) for an answer that "
             "reasoned", answer=dict(message))
    return reasoning


@check("structured_output_valid", severity=Severity.CRITICAL,
       description="a json_schema answer that finished with stop is JSON valid against it",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED, VerdictClass.INCONCLUSIVE}))
def check_structured_output(text: str, schema: Mapping[str, Any],
                            finish_reason: str | None, *, cut_allowed: bool = False) -> Any:
    """The parsed answer. An answer cut by max_tokens proves nothing about the schema: it is
    inconclusive (no verdict, not a PASS) unless ``cut_allowed`` (a feature about the cut
    itself), and IGNORED when it does not even begin as a JSON value of the schema (what a
    server that accepts response_format and never constrains its output sends)."""
    if finish_reason == "length":
        _check_json_start(text, schema)
        if not cut_allowed:
            inconclusive("structured_output_valid",
                         f"the answer was cut by max_tokens after {len(text)} characters")
        return None
    if finish_reason != "stop":
        fail("structured_output_valid", f"finish_reason {finish_reason!r}", text=text)
    # A complete answer that is not JSON, or breaks the schema, was not constrained by the
    # response_format the server accepted: silently not honoured (IGNORED, a FAIL class).
    try:
        value = json.loads(text)
    except ValueError:
        fail("structured_output_valid", "the output is not JSON", ignored=True,
             ignored_field="response_format", text=text)
    errors = list(jsonschema.Draft202012Validator(dict(schema)).iter_errors(value))
    if errors:
        fail("structured_output_valid", f"the output breaks the schema: {errors[0].message}",
             ignored=True, ignored_field="response_format", text=text, schema=dict(schema))
    return value


def judge_forced_call(case: str, calls: Sequence[Mapping[str, Any]], reason: str | None,
                      content: str | None) -> None:
    """A forced ``tool_choice`` (``case``: required, named) answered: a call cut by max_tokens
    decides nothing (no public rule says what a server sends then: INCONCLUSIVE); no call at all
    is the choice accepted and not honoured (IGNORED), whatever markup the unconstrained model
    left in the content (no public rule says what a server does with a malformed call); beside
    a parsed call, markup in the content is a leak."""
    if not calls and reason == "length":
        inconclusive("tool_call_declared", f"tool_choice {case}: the answer was cut by "
                     "max_tokens before a tool call was complete")
    if not calls:
        fail("tool_call_declared",
             f"tool_choice {case} answered without a tool call (finish_reason {reason})",
             ignored=True, ignored_field="tool_choice", calls=list(calls), content=content)
    check_tool_markup_hidden(content)


_STARTS = {"object": "{", "array": "[", "string": '"', "boolean": "tf", "null": "n",
           "integer": "-0123456789", "number": "-0123456789"}


def json_starts(schema: Mapping[str, Any]) -> str | None:
    """The characters a JSON value valid against ``schema`` can begin with (None: any; only
    ``enum``, ``const`` and ``type`` are read, a combinator allows anything)."""
    if "enum" in schema or "const" in schema:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        return "".join(json.dumps(value)[0] for value in values)
    kind = schema.get("type")
    if any(key in schema for key in ("anyOf", "oneOf", "allOf", "$ref")) or kind is None:
        return None
    kinds = kind if isinstance(kind, list) else [kind]
    return "".join(_STARTS.get(str(k), "") for k in kinds) or None


# A Markdown code fence a server may put around a constrained answer (llama.cpp's chat parser
# admits an optional ```json fence before the schema's value: common/chat-auto-parser-generator.cpp)
_FENCE = re.compile(r"^```[A-Za-z]*\s*")


def _check_json_start(text: str, schema: Mapping[str, Any]) -> None:
    begun = text.lstrip()
    if begun.startswith("`"):  # judged after the fence; a fence cut short shows nothing yet
        fence = _FENCE.match(begun)
        begun = begun[fence.end():] if fence is not None else ""
    starts = json_starts(schema)
    if begun and starts is not None and begun[0] not in starts:
        fail("structured_output_valid", "response_format json_schema was accepted, but the "
             f"answer begins {begun[:40]!r}, as no JSON value of the schema does",
             ignored=True, ignored_field="response_format", text=text, schema=dict(schema))


@check("error_no_schema_echo", severity=Severity.MEDIUM,
       description="a schema rejected for its size or shape is not echoed in the error")
def check_error_no_schema_echo(body: Any, sentinel: str) -> None:
    if sentinel in json.dumps(body):
        fail("error_no_schema_echo", "the error body echoes the schema", body=body)
