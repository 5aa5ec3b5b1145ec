"""`response_format: json_schema` on /v1/chat/completions and /v1/completions: outputs
validate, limits answer 400 without echoing the schema, json_object is a 400."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlxcel_conformance.checks.chat_semantics import (
    check_error_no_schema_echo,
    check_structured_output,
)
from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import (
    CHAT_PATH,
    COMPLETIONS_PATH,
    chat_payload,
    completion_payload,
    message_content,
    response_of,
)
from mlxcel_conformance.readers import last_finish_reason, read_chat, read_stream

ANIMAL = {
    "type": "object",
    "properties": {
        "animal": {"type": "string", "maxLength": 12},
        "habitat": {"enum": ["forest", "desert", "ocean", "urban", "unknown"]},
    },
    "required": ["animal", "habitat"],
    "additionalProperties": False,
}
JSON_MESSAGES = [{"role": "system", "content": "Reply with JSON only."},
                 {"role": "user", "content": "Describe a cat as JSON."}]


def _format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "result", "strict": True,
                                                   "schema": schema}}


@pytest.mark.conformance(family="chat", feature="chat.structured.json_schema")
def test_chat_json_schema(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, max_tokens=48, response_format=_format(ANIMAL))
    payload["messages"] = JSON_MESSAGES
    body = read_chat(client, payload)
    check_structured_output(message_content(body), ANIMAL, body["choices"][0].get("finish_reason"))
    stream = read_stream(client, payload)
    check_structured_output(stream.content, ANIMAL, last_finish_reason(stream))


@pytest.mark.conformance(family="completions", feature="completions.structured.json_schema",
                         extension="completions_structured")
def test_completions_json_schema(client: SuiteClient, model_name: str | None) -> None:
    schema = {"type": "object", "properties": {"value": {"type": "string", "maxLength": 8}},
              "required": ["value"], "additionalProperties": False}
    body = read_chat(client, path=COMPLETIONS_PATH, payload=completion_payload(
        model_name, max_tokens=32, response_format=_format(schema)))
    choice = body["choices"][0]
    check_structured_output(choice["text"], schema, choice.get("finish_reason"))


def _deep(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


SENTINEL = "zq_schema_sentinel_zq"
BAD_FORMATS: dict[str, dict[str, Any]] = {
    "json_object": {"type": "json_object"},
    "too_large": _format({"type": "object", "description": SENTINEL * 4000}),
    "too_deep": _format({**_deep(40), "description": SENTINEL}),
    "too_many_refs": _format({"$defs": {"s": {"type": "string"}}, "description": SENTINEL,
                              "type": "object",
                              "properties": {f"p{i}": {"$ref": "#/$defs/s"} for i in range(70)}}),
}


@pytest.mark.conformance(family="chat", feature="chat.structured.errors",
                         extension="schema_limits")
@pytest.mark.parametrize("path", [CHAT_PATH, COMPLETIONS_PATH], ids=["chat", "completions"])
@pytest.mark.parametrize("case", sorted(BAD_FORMATS))
def test_response_format_rejected(client: SuiteClient, model_name: str | None, case: str,
                                  path: str) -> None:
    if path == CHAT_PATH:
        payload = chat_payload(model_name, response_format=BAD_FORMATS[case])
    else:
        payload = completion_payload(model_name, response_format=BAD_FORMATS[case])
    status, body = response_of(client.post(path, payload))
    check_error_body_openai(body, status=status, expected=400)
    check_error_no_schema_echo(body, SENTINEL)


@pytest.mark.conformance(family="chat", feature="chat.structured.length")
def test_json_schema_cut_short_says_length(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, max_tokens=3, response_format=_format(ANIMAL))
    payload["messages"] = JSON_MESSAGES
    body = read_chat(client, payload)
    check_structured_output(message_content(body), ANIMAL, body["choices"][0].get("finish_reason"),
                            cut_allowed=True)


_SCALARS = st.sampled_from([
    {"type": "integer", "minimum": 0, "maximum": 99},
    {"type": "boolean"},
    {"type": "string", "maxLength": 6},
    {"enum": ["a", "b", "c"]},
    {"type": "null"},
])
_SCHEMAS = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.dictionaries(st.sampled_from(["x", "y", "z"]), inner, min_size=1, max_size=2).map(
            lambda props: {"type": "object", "properties": props, "required": sorted(props),
                           "additionalProperties": False}),
        inner.map(lambda item: {"type": "array", "items": item, "minItems": 1, "maxItems": 2}),
    ),
    max_leaves=4,
)


@pytest.mark.conformance(family="chat", feature="chat.structured.generated")
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schema=_SCHEMAS)
def test_generated_schemas_validate(client: SuiteClient, model_name: str | None,
                                    schema: dict[str, Any]) -> None:
    payload = chat_payload(model_name, max_tokens=40, response_format=_format(schema))
    payload["messages"] = JSON_MESSAGES
    body = read_chat(client, payload)
    check_structured_output(message_content(body), schema, body["choices"][0].get("finish_reason"))
