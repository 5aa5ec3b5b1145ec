"""One output path for every API family, end to end on fixture models (no mocks):

- Anthropic Messages and Responses stream a tool call's arguments as the model generates them
  (``input_json_delta`` / ``response.function_call_arguments.delta``, several before the call
  ends, in every format that parses a block still being generated), in every tool-call
  format, and the streamed call is the one the body reports;
- a model whose reasoning markers are not ``<think>`` (``gpt-oss-tiny``: Harmony's analysis
  channel, then the final channel) has its reasoning split from the answer alike on Chat,
  Responses and Messages, streamed and not.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.chat.tool_formats.base import ToolFormat
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel_conformance.checks.anthropic_events import check_anthropic_stream
from mlxcel_conformance.checks.responses_events import check_responses_stream
from mlxcel_conformance.sse import SSEEvent, parse_sse

from .family_fixtures import FAMILY_DIRS, MODELS, SCRIPTED_BY_NAME, SPECS

PARIS = SCRIPTED_BY_NAME["tool_call"]
HELLO = SCRIPTED_BY_NAME["hello"]
FORMATS = sorted(set(FAMILY_DIRS) | {"hermes"})


def _streams_arguments(fmt: str) -> bool:
    """Whether the format parses a block still being generated (others announce a call once
    its block is whole, then send its arguments in one piece)."""
    cls = type(importlib.import_module(f"mlxcel.chat.tool_formats.{fmt}").FORMAT)
    return cls.stream_head is not ToolFormat.stream_head


def _serve(directory: str) -> Iterator[TestClient]:
    model = str(MODELS / directory)
    config = ServerConfig(model=model, ctx_size=2048, parallel=1)
    engine = Engine(EngineConfig(model=model, ctx_size=2048, parallel=1, cache_prompt=False))
    with TestClient(create_app(config, engine)) as client:
        assert engine.wait_ready(60)
        yield client


@pytest.fixture(scope="module", params=FORMATS)
def served(request: pytest.FixtureRequest) -> Iterator[tuple[str, TestClient]]:
    directory = "qwen3-tiny" if request.param == "hermes" else FAMILY_DIRS[request.param]
    for client in _serve(directory):
        yield request.param, client


@pytest.fixture(scope="module")
def harmony() -> Iterator[TestClient]:
    yield from _serve(FAMILY_DIRS["harmony"])


def _sse(client: TestClient, path: str, body: dict[str, Any]) -> list[SSEEvent]:
    with client.stream("POST", path, json={**body, "stream": True}) as resp:
        assert resp.status_code == 200, resp.read()
        text = "".join(resp.iter_text())
    return list(parse_sse(text).events)


def _messages_body(case: dict[str, Any], **fields: Any) -> dict[str, Any]:
    tools = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
              "input_schema": t["function"]["parameters"]} for t in case.get("tools") or []]
    return {"model": "m", "max_tokens": 96, "temperature": 0, "messages": case["messages"],
            **({"tools": tools} if tools else {}), **fields}


def _responses_body(case: dict[str, Any], **fields: Any) -> dict[str, Any]:
    tools = [{"type": "function", **t["function"]} for t in case.get("tools") or []]
    return {"model": "m", "max_output_tokens": 96, "temperature": 0, "input": case["messages"],
            **({"tools": tools} if tools else {}), **fields}


def test_messages_stream_tool_arguments_as_generated(served: tuple[str, TestClient]) -> None:
    """Anthropic tools reach the template in another key order than the OpenAI tools the
    fixtures were trained on, which throws most tiny models off their script: those are asked
    for a call (``tool_choice: any``, a grammar) and must stream the one the body reports."""
    fmt, client = served
    choice = {"type": "auto" if fmt == "hermes" else "any"}
    # qwen3-tiny learned its script on the template's default prompt, which thinking renders
    # (without it, Messages render chat's enable_thinking: false)
    thinking = {"thinking": {"type": "adaptive"}} if fmt == "hermes" else {}
    body = _messages_body(PARIS, tool_choice=choice, **thinking)
    events = _sse(client, "/v1/messages", body)
    check_anthropic_stream(events)
    data = [json.loads(e.data) for e in events]
    start = next(i for i, d in enumerate(data) if d["type"] == "content_block_start"
                 and d["content_block"]["type"] == "tool_use")
    block = data[start]["content_block"]
    assert block["name"] == "get_weather" and block["input"] == {}
    stop = next(i for i in range(start, len(data)) if data[i]["type"] == "content_block_stop")
    deltas = [d["delta"] for d in data[start + 1:stop]]
    assert all(d["type"] == "input_json_delta" for d in deltas)
    assert deltas[0]["partial_json"] == ""  # as Anthropic's own streams open a tool_use block
    fragments = [d["partial_json"] for d in deltas if d["partial_json"]]
    # Streamed as generated: several fragments before the block closes.
    assert len(fragments) >= (2 if _streams_arguments(fmt) else 1), (fmt, fragments)
    streamed = json.loads("".join(fragments))
    stop_reason = next(d for d in data if d["type"] == "message_delta")["delta"]["stop_reason"]
    assert stop_reason == "tool_use"
    whole = client.post("/v1/messages", json=body).json()
    assert [(b["name"], b["input"]) for b in whole["content"] if b["type"] == "tool_use"] == \
        [("get_weather", streamed)]
    if fmt == "hermes":
        assert streamed == {"city": "Paris"}


def test_responses_stream_tool_arguments_as_generated(served: tuple[str, TestClient]) -> None:
    fmt, client = served
    events = _sse(client, "/v1/responses", _responses_body(PARIS))
    check_responses_stream(events)
    data = [json.loads(e.data) for e in events]
    added = next(i for i, d in enumerate(data) if d["type"] == "response.output_item.added"
                 and d["item"]["type"] == "function_call")
    item = data[added]["item"]
    assert (item["name"], item["arguments"], item["status"]) == ("get_weather", "", "in_progress")
    done = next(i for i in range(added, len(data))
                if data[i]["type"] == "response.function_call_arguments.done")
    deltas = data[added + 1:done]
    assert all(d["type"] == "response.function_call_arguments.delta"
               and d["item_id"] == item["id"] for d in deltas)
    assert len(deltas) >= (2 if _streams_arguments(fmt) else 1), (fmt, deltas)
    arguments = "".join(d["delta"] for d in deltas)
    assert data[done]["arguments"] == arguments
    assert json.loads(arguments) == {"city": "Paris"}
    closed = data[done + 1]
    assert closed["type"] == "response.output_item.done"
    assert closed["item"]["status"] == "completed" and closed["item"]["arguments"] == arguments
    body = client.post("/v1/responses", json=_responses_body(PARIS)).json()
    assert [(i["name"], json.loads(i["arguments"])) for i in body["output"]
            if i["type"] == "function_call"] == [("get_weather", {"city": "Paris"})]


REASONING = SPECS.HARMONY_REASONING
ANSWER = HELLO["reply"]


def test_harmony_reasoning_on_chat(harmony: TestClient) -> None:
    body = {"messages": HELLO["messages"], "max_tokens": 64, "temperature": 0}
    message = harmony.post("/v1/chat/completions", json=body).json()["choices"][0]["message"]
    assert (message["reasoning_content"], message["content"]) == (REASONING, ANSWER)
    with harmony.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as resp:
        lines = [line[6:] for line in resp.iter_lines() if line.startswith("data: {")]
    deltas = [c["choices"][0]["delta"] for c in map(json.loads, lines) if c["choices"]]
    assert "".join(d.get("reasoning_content") or "" for d in deltas) == REASONING
    assert "".join(d.get("content") or "" for d in deltas) == ANSWER


def test_harmony_reasoning_on_responses(harmony: TestClient) -> None:
    body = _responses_body(HELLO, max_output_tokens=64)
    output = harmony.post("/v1/responses", json=body).json()["output"]
    streamed = check_responses_stream(_sse(harmony, "/v1/responses", body))
    for items in (output, streamed.response["output"]):
        assert [i["type"] for i in items] == ["reasoning", "message"]
        assert items[0]["content"][0]["text"] == REASONING
        assert items[1]["content"][0]["text"] == ANSWER


def test_harmony_reasoning_on_messages(harmony: TestClient) -> None:
    body = _messages_body(HELLO, max_tokens=64, thinking={"type": "adaptive"})
    content = harmony.post("/v1/messages", json=body).json()["content"]
    streamed = check_anthropic_stream(_sse(harmony, "/v1/messages", body))
    for blocks in (content, streamed.message["content"]):
        assert [b["type"] for b in blocks] == ["thinking", "text"]
        assert (blocks[0]["thinking"], blocks[1]["text"]) == (REASONING, ANSWER)
    plain = harmony.post("/v1/messages", json=_messages_body(HELLO, max_tokens=64)).json()
    assert [(b["type"], b["text"]) for b in plain["content"]] == [("text", ANSWER)]
