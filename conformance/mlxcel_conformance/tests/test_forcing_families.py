"""Forced tool choice and JSON-schema output on the Responses and Anthropic families: the same
rules as chat (the reference's tool_choice section), so even a weak model answers with a call to
a declared function, or with JSON that validates against the requested schema."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import with_model
from mlxcel_conformance.readers import read_message, read_response

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"], "additionalProperties": False}
PET_SCHEMA = {"type": "object",
              "properties": {"animal": {"type": "string"},
                             "habitat": {"enum": ["forest", "desert", "ocean", "urban"]}},
              "required": ["animal", "habitat"], "additionalProperties": False}


def _responses(client: SuiteClient, model: str | None, **fields: Any) -> dict[str, Any]:
    payload = with_model(model, {"input": "Describe a cat as JSON.", "max_output_tokens": 48,
                                 "temperature": 0, **fields})
    return read_response(client, payload)


@pytest.mark.conformance(family="responses", feature="responses.text_format.json_schema")
def test_responses_json_schema_output_validates(client: SuiteClient,
                                                model_name: str | None) -> None:
    fmt = {"type": "json_schema", "name": "pet", "schema": PET_SCHEMA, "strict": True}
    body = _responses(client, model_name, text={"format": fmt}, max_output_tokens=64,
                      instructions="Reply with JSON only.")
    texts = [part.get("text", "") for item in body.get("output", [])
             if item.get("type") == "message" for part in item.get("content", [])]
    text = "".join(texts)
    if body.get("status") == "incomplete":
        pytest.skip("UNSUPPORTED: the constrained answer hit max_output_tokens (honest incomplete)")
    try:
        jsonschema.validate(json.loads(text), PET_SCHEMA)
    except (ValueError, jsonschema.ValidationError) as exc:
        fail("structured_output_valid", f"text.format json_schema gave {text!r}: {exc}"[:400],
             output=body.get("output"))


@pytest.mark.conformance(family="responses", feature="responses.tool_choice.required")
def test_responses_required_tool_choice_calls_a_declared_function(
    client: SuiteClient, model_name: str | None
) -> None:
    tool = {"type": "function", "name": "get_weather", "parameters": WEATHER_SCHEMA}
    body = _responses(client, model_name, input="What is the weather in Paris?",
                      tools=[tool], tool_choice="required", max_output_tokens=64)
    calls = [i for i in body.get("output", []) if i.get("type") == "function_call"]
    used = (body.get("usage") or {}).get("output_tokens") or 0
    if body.get("status") == "incomplete" or used >= 64:
        # cut by max_output_tokens: an honest end, with or without a partial call (whether
        # the status says so is responses.max_output_tokens' business)
        return
    if not calls:
        fail("forced_tool_call", "tool_choice 'required' produced no function_call item",
             ignored=True, ignored_field="tool_choice", output=body.get("output"),
             status=body.get("status"))
    call = calls[0]
    if call.get("name") != "get_weather":
        fail("forced_tool_call", f"called undeclared {call.get('name')!r}", call=call)
    try:
        jsonschema.validate(json.loads(call.get("arguments") or ""), WEATHER_SCHEMA)
    except (ValueError, jsonschema.ValidationError) as exc:
        fail("forced_tool_call", f"arguments do not fit the schema: {exc}"[:300], call=call)


@pytest.mark.conformance(family="anthropic", feature="anthropic.tool_choice.any")
def test_anthropic_any_tool_choice_uses_a_declared_tool(
    client: SuiteClient, model_name: str | None
) -> None:
    payload = with_model(model_name, {
        "max_tokens": 64, "temperature": 0,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
        "tools": [{"name": "get_weather", "input_schema": WEATHER_SCHEMA}],
        "tool_choice": {"type": "any"},
    })
    body = read_message(client, payload)
    uses = [b for b in body.get("content", []) if b.get("type") == "tool_use"]
    if body.get("stop_reason") == "max_tokens":
        return  # cut by max_tokens: an honest end, with or without a partial call
    if not uses or body.get("stop_reason") != "tool_use":
        fail("forced_tool_call", "tool_choice any produced no tool_use block",
             ignored=True, ignored_field="tool_choice", content=body.get("content"),
             stop_reason=body.get("stop_reason"))
    if uses[0].get("name") != "get_weather" or not isinstance(uses[0].get("input"), dict):
        fail("forced_tool_call", "the tool_use block is not a call of the declared tool",
             block=uses[0])
    try:
        jsonschema.validate(uses[0]["input"], WEATHER_SCHEMA)
    except jsonschema.ValidationError as exc:
        fail("forced_tool_call", f"input does not fit the schema: {exc.message}", block=uses[0])
