"""A forced tool choice always ends with a call: the schema bounds (``chat/forced_bounds``) and,
end to end on the weak fixture model, prompts that used to run to ``finish_reason: length``
inside a free JSON string."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.chat.forced_bounds import (
    ARRAY_ITEMS_CAP,
    MIN_STRING_CHARS,
    bounded_parameters,
    bounded_tools,
    string_cap,
)
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")


def _function(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": properties, "required": sorted(properties)}}}


WEATHER = _function("get_weather", {"city": {"type": "string"}})
TIME = _function("get_time", {"timezone": {"type": "string"}})


def test_free_strings_get_a_share_of_the_budget() -> None:
    params = {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": ["string", "null"]},
        "tag": {"type": "string", "enum": ["x", "y"]}, "short": {"type": "string", "maxLength": 3},
        "n": {"type": "integer"}}}
    bounded = bounded_parameters(params, 200)
    cap = string_cap(params, 200)
    assert bounded["properties"]["a"]["maxLength"] == cap
    assert bounded["properties"]["b"]["maxLength"] == cap
    assert "maxLength" not in bounded["properties"]["tag"]
    assert bounded["properties"]["short"]["maxLength"] == 3
    assert bounded["additionalProperties"] is False
    assert "maxLength" not in params["properties"]["a"]  # the caller's schema is untouched
    assert string_cap(params, 400) > cap > string_cap(params, 100)


def test_nested_arrays_and_objects_are_closed() -> None:
    params = {"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"label": {"type": "string", "minLength": 9}}}}},
        "additionalProperties": True}
    bounded = bounded_parameters(params, 64)
    items = bounded["properties"]["items"]
    assert items["maxItems"] == ARRAY_ITEMS_CAP
    assert items["items"]["additionalProperties"] is False
    # a declared choice is kept (other keys allowed), their values bounded (json_bounds)
    assert "anyOf" in bounded["additionalProperties"]
    assert items["items"]["properties"]["label"]["maxLength"] >= 9  # never below minLength
    assert string_cap({"type": "string"}, 1) == MIN_STRING_CHARS


def test_referenced_definitions_are_bounded() -> None:
    params = {"type": "object", "properties": {"place": {"$ref": "#/$defs/place"}},
              "$defs": {"place": {"type": "object", "properties": {"name": {"type": "string"}}}}}
    place = bounded_parameters(params, 64)["$defs"]["place"]
    assert place["additionalProperties"] is False
    assert place["properties"]["name"]["maxLength"] >= MIN_STRING_CHARS


def test_bounded_tools_copies() -> None:
    tools = [WEATHER]
    out = bounded_tools(tools, 64)
    assert out[0]["function"]["parameters"]["properties"]["city"]["maxLength"] > 0
    assert "maxLength" not in WEATHER["function"]["parameters"]["properties"]["city"]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=4096, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


# Each of these ran to finish_reason "length" inside a free string before the bounds.
OLD_FAILURES = [
    ("Say hello.", "required", 64),
    ("Say hello.", "named", 64),
    ("Count to five.", "named", 64),
    ("Count to five.", "named", 512),
    ("Write a poem about the sea.", "named", 64),
    ("hi", "named", 64),
]


@pytest.mark.parametrize(("prompt", "kind", "max_tokens"), OLD_FAILURES)
def test_forced_choice_always_ends_with_a_valid_call(
    client: TestClient, prompt: str, kind: str, max_tokens: int
) -> None:
    choice: Any = "required" if kind == "required" else \
        {"type": "function", "function": {"name": "get_time"}}
    body = {"messages": [{"role": "user", "content": prompt}], "tools": [WEATHER, TIME],
            "tool_choice": choice, "max_tokens": max_tokens, "temperature": 0}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    choice_out = response.json()["choices"][0]
    assert choice_out["finish_reason"] == "tool_calls", choice_out
    calls = choice_out["message"]["tool_calls"]
    assert len(calls) >= 1
    declared = {t["function"]["name"]: t["function"]["parameters"] for t in (WEATHER, TIME)}
    for call in calls:
        name = call["function"]["name"]
        assert name in declared and (kind == "required" or name == "get_time")
        jsonschema.validate(json.loads(call["function"]["arguments"]), declared[name])


def test_forced_stream_ends_with_tool_calls(client: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": "Tell me a story."}], "tools": [TIME],
            "tool_choice": "required", "max_tokens": 64, "temperature": 0, "stream": True}
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    chunks = [json.loads(line) for line in lines if line != "[DONE]"]
    reasons = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
    assert reasons[-1] == "tool_calls"


def test_anthropic_any_on_a_story_prompt_is_a_tool_use(client: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 64,
            "temperature": 0, "tool_choice": {"type": "any"},
            "tools": [{"name": "get_time", "input_schema": TIME["function"]["parameters"]}]}
    message = client.post("/v1/messages", json=body).json()
    assert message["stop_reason"] == "tool_use", message
    assert [b["name"] for b in message["content"] if b["type"] == "tool_use"] == ["get_time"]


def test_malformed_tool_schemas_are_left_to_the_grammar_engine() -> None:
    """Wrong types in a tool schema never crash the bounds (the grammar compile then decides,
    and a schema it refuses leaves the forced call to the instruction)."""
    params = {"type": "object", "properties": [1], "anyOf": {"x": 1},
              "$defs": ["y"], "minItems": "3", "items": {"type": "array", "maxItems": "x"}}
    bounded_parameters(params, 64)
    bounded_parameters({"type": "string", "minLength": "x"}, 64)


@pytest.mark.parametrize("kind", ["required", "named"])
@pytest.mark.parametrize("prompt", ["Say hello.", "Count to five."])
def test_numeric_parameters_end_within_64_tokens(client: TestClient, kind: str,
                                                 prompt: str) -> None:
    """The issue's case on Hermes (qwen3-tiny): numbers used to run to max_tokens."""
    from .test_family_serving import CHOICES, NUMERIC_TOOLS, SCHEMAS

    body = {"messages": [{"role": "user", "content": prompt}], "tools": NUMERIC_TOOLS,
            "tool_choice": CHOICES[kind], "max_tokens": 64, "temperature": 0}
    out = client.post("/v1/chat/completions", json=body).json()
    assert out["choices"][0]["finish_reason"] == "tool_calls", out
    [call] = out["choices"][0]["message"]["tool_calls"]
    jsonschema.validate(json.loads(call["function"]["arguments"]),
                        SCHEMAS[call["function"]["name"]])
    unbounded = client.post("/v1/chat/completions", json={k: v for k, v in body.items()
                                                          if k != "max_tokens"}).json()
    # No budget given: the call still ends by itself (15 integral and 10 fraction digits at
    # most, single-digit tokens on this vocabulary: about 70 tokens for two numbers).
    assert unbounded["choices"][0]["finish_reason"] == "tool_calls"
    assert unbounded["usage"]["completion_tokens"] < 96


def test_a_responses_call_cut_by_the_limit_stays_valid_history(client: TestClient) -> None:
    """A Responses turn cut inside a forced call stores no call with broken arguments, so the
    next turn that continues it is served (it used to be a 400 on the server's own item)."""
    from .test_family_serving import NUMERIC_TOOLS

    tools = [{"type": "function", **t["function"]} for t in NUMERIC_TOOLS]
    for limit in (12, 16, 20):
        first = client.post("/v1/responses", json={
            "input": "Say hello.", "tools": tools, "tool_choice": "required",
            "max_output_tokens": limit, "temperature": 0}).json()
        assert first["status"] == "incomplete", first
        for item in first["output"]:
            if item["type"] == "function_call":
                assert isinstance(json.loads(item["arguments"]), dict)
        follow = client.post("/v1/responses", json={
            "input": "Go on.", "previous_response_id": first["id"], "max_output_tokens": 4})
        assert follow.status_code == 200, follow.text
