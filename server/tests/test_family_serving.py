"""Every tool-call family fixture served end to end: a chat request with tools to the server
returns the call the model generated in its family's wire format, parsed into ``tool_calls``
with ``finish_reason: "tool_calls"``, in a body and in a stream (no markup in the content).
A forced choice over numeric parameters ends with a valid call within 64 tokens in every
format, and a call cut by ``max_tokens`` is reported alike in the body and the stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig

from .family_fixtures import FAMILY_DIRS, HELLO_FAMILIES, MODELS, SCRIPTED_BY_NAME

PARIS = SCRIPTED_BY_NAME["tool_call"]
TOKYO = SCRIPTED_BY_NAME["tool_call_time"]
CASES = {"paris": (PARIS, ("get_weather", {"city": "Paris"})),
         "tokyo": (TOKYO, ("get_time", {"timezone": "Asia/Tokyo"}))}


@pytest.fixture(scope="module", params=sorted(FAMILY_DIRS))
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, TestClient]]:
    model = str(MODELS / FAMILY_DIRS[request.param])
    config = ServerConfig(model=model, ctx_size=2048, parallel=1)
    engine = Engine(EngineConfig(model=model, ctx_size=2048, parallel=1, cache_prompt=False))
    with TestClient(create_app(config, engine)) as client:
        assert engine.wait_ready(60)
        yield request.param, client


def _body(case: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"messages": case["messages"], "tools": case["tools"], "max_tokens": 96,
            "temperature": 0, **fields}


def _stream(client: TestClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as resp:
        assert resp.status_code == 200
        lines = [line[6:] for line in resp.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def _streamed_calls(chunks: list[dict[str, Any]]) -> tuple[str, list[tuple[str, Any]], str]:
    """(content, [(name, arguments)], last finish_reason) from the chunks' deltas."""
    content, calls, reason = "", {}, ""
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            content += delta.get("content") or ""
            for call in delta.get("tool_calls") or []:
                slot = calls.setdefault(call["index"], {"name": "", "arguments": ""})
                function = call.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            reason = choice.get("finish_reason") or reason
    return content, [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())],\
        reason


@pytest.mark.parametrize("case", sorted(CASES))
def test_tool_call_body(served: tuple[str, TestClient], case: str) -> None:
    fmt, client = served
    conversation, expected = CASES[case]
    response = client.post("/v1/chat/completions", json=_body(conversation))
    assert response.status_code == 200
    choice = response.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls", (fmt, choice)
    calls = choice["message"]["tool_calls"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in calls] \
        == [expected], (fmt, choice)
    assert all(c["type"] == "function" and c["id"] for c in calls)
    assert not choice["message"]["content"], (fmt, choice)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tool_call_stream(served: tuple[str, TestClient], case: str) -> None:
    fmt, client = served
    conversation, expected = CASES[case]
    content, calls, reason = _streamed_calls(_stream(client, _body(conversation)))
    assert reason == "tool_calls", fmt
    assert calls == [expected], fmt
    assert content == "", (fmt, content)  # no markup leaks into the text


def test_no_tools_no_parse(served: tuple[str, TestClient]) -> None:
    """Without tools the same generation is plain text: nothing is parsed."""
    fmt, client = served
    body = _body(PARIS)
    body.pop("tools")
    choice = client.post("/v1/chat/completions", json=body).json()["choices"][0]
    assert choice["finish_reason"] != "tool_calls" and not choice["message"].get("tool_calls")


@pytest.mark.parametrize("served", HELLO_FAMILIES, indirect=True)
def test_hello_is_plain_text(served: tuple[str, TestClient]) -> None:
    """Only the families trained on a plain-text reply (Harmony's reasons first, on its
    analysis channel: the answer is still the plain text)."""
    fmt, client = served
    body = {"messages": SCRIPTED_BY_NAME["hello"]["messages"], "max_tokens": 64,
            "temperature": 0}
    choice = client.post("/v1/chat/completions", json=body).json()["choices"][0]
    assert choice["finish_reason"] == "stop", (fmt, choice)
    assert choice["message"]["content"] == SCRIPTED_BY_NAME["hello"]["reply"]
    assert not choice["message"].get("tool_calls")


def _function(name: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {
        "type": "object", "properties": properties, "required": list(properties)}}}


# The case: numbers used to run to max_tokens ({"a": 2111111111...).
NUMERIC_TOOLS = [_function("get_weather", {"city": {"type": "string"},
                                           "days": {"type": "integer"}}),
                 _function("add", {"a": {"type": "number"}, "b": {"type": "number"}})]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in NUMERIC_TOOLS}
CHOICES: dict[str, Any] = {"required": "required",
                           "named": {"type": "function", "function": {"name": "add"}}}
BUDGET = 64


def _forced(choice: str, max_tokens: int) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "Say hello."}], "tools": NUMERIC_TOOLS,
            "tool_choice": CHOICES[choice], "max_tokens": max_tokens, "temperature": 0}


@pytest.mark.parametrize("choice", sorted(CHOICES))
def test_forced_numeric_call_ends_with_a_valid_call(served: tuple[str, TestClient],
                                                    choice: str) -> None:
    fmt, client = served
    budget = BUDGET
    body = client.post("/v1/chat/completions", json=_forced(choice, budget)).json()
    out = body["choices"][0]
    assert out["finish_reason"] == "tool_calls", (fmt, out)
    assert body["usage"]["completion_tokens"] <= budget
    [call] = out["message"]["tool_calls"]
    name = call["function"]["name"]
    assert choice == "required" or name == "add", (fmt, call)
    jsonschema.validate(json.loads(call["function"]["arguments"]), SCHEMAS[name])
    _, streamed, reason = _streamed_calls(_stream(client, _forced(choice, budget)))
    assert reason == "tool_calls" and streamed == [(name, json.loads(
        call["function"]["arguments"]))], fmt


def _raw_streamed_calls(chunks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    calls: dict[int, list[str]] = {}
    for chunk in chunks:
        for choice in chunk.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                slot = calls.setdefault(call["index"], ["", ""])
                slot[0] += (call.get("function") or {}).get("name") or ""
                slot[1] += (call.get("function") or {}).get("arguments") or ""
    return [(n, a) for _, (n, a) in sorted(calls.items())]


@pytest.mark.parametrize("cut", [6, 12, 20])
def test_call_cut_by_max_tokens_is_reported_alike(served: tuple[str, TestClient],
                                                  cut: int) -> None:
    """docs/chat.md: a call whose name was written is reported in both modes with the
    arguments written so far and ``finish_reason: "length"``; content agrees too."""
    fmt, client = served
    request = _forced("named", cut)
    out = client.post("/v1/chat/completions", json=request).json()["choices"][0]
    chunks = _stream(client, request)
    content = "".join((c["choices"][0]["delta"].get("content") or "") for c in chunks
                      if c.get("choices"))
    reasons = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
    body_calls = [(c["function"]["name"], c["function"]["arguments"])
                  for c in out["message"].get("tool_calls") or []]
    assert _raw_streamed_calls(chunks) == body_calls, (fmt, out)
    assert content == (out["message"]["content"] or ""), (fmt, out)
    assert reasons[-1] == out["finish_reason"], fmt
    if out["finish_reason"] == "length":
        assert all(name == "add" for name, _ in body_calls), (fmt, body_calls)
