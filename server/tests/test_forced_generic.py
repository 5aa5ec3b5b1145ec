"""A forced tool choice on a chat template with no tool syntax (SmolLM2's has none): every
family answers it with a call in the generic JSON format, bound by its grammar; ``auto`` keeps
answering. Served for real from the fixture model with such a template installed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.chat.template import apply_template_override
from mlxcel.chat.tool_calls import extract_tool_calls, template_tool_format, tool_format_of
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")
# ChatML with no tools at all: the shape of SmolLM2-Instruct's template.
TOOLLESS = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
            "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
PARAMETERS = {"type": "object", "properties": {"city": {"type": "string"}},
              "required": ["city"]}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}
TIME: dict[str, Any] = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}}}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=4096, parallel=2, chat_template=TOOLLESS)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        assert engine.model is not None
        # --chat-template reaches the model on its first chat request; install it up front
        # so the Responses and Messages cases see it too, whatever order they run in.
        apply_template_override(engine.model, TOOLLESS)
        yield test_client


def test_the_fallback_is_generic_json(client: TestClient) -> None:
    model = client.app.state.mlxcel.engine.model  # type: ignore[attr-defined]
    assert template_tool_format(model) is None
    assert tool_format_of(model).name == "generic_json"
    text = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    content, calls = extract_tool_calls(model, text, [WEATHER])
    assert (content, [(c.name, json.loads(c.arguments)) for c in calls]) == (
        "", [("get_weather", {"city": "Paris"})])
    assert extract_tool_calls(model, text, None) == (text, [])  # no tools sent: plain text


def _chat(client: TestClient, choice: Any, **extra: Any) -> dict[str, Any]:
    body = {"messages": [{"role": "user", "content": "Tell me a story."}],
            "tools": [WEATHER, TIME], "tool_choice": choice, "max_tokens": 48,
            "temperature": 0, **extra}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json()["choices"][0])


@pytest.mark.parametrize("choice", ["required", {"type": "function",
                                                 "function": {"name": "get_weather"}}])
def test_chat_forced_choice_is_a_call(client: TestClient, choice: Any) -> None:
    out = _chat(client, choice)
    assert out["finish_reason"] == "tool_calls", out
    call = out["message"]["tool_calls"][0]["function"]
    assert choice == "required" or call["name"] == "get_weather"
    schema: dict[str, Any] = {"get_weather": PARAMETERS,
                              "get_time": TIME["function"]["parameters"]}
    jsonschema.validate(json.loads(call["arguments"]), schema[call["name"]])


def test_chat_auto_still_answers(client: TestClient) -> None:
    out = _chat(client, "auto")
    assert out["finish_reason"] in ("stop", "length", "tool_calls")


def test_responses_required_is_a_function_call(client: TestClient) -> None:
    body = {"input": "Tell me a story.", "max_output_tokens": 48, "temperature": 0,
            "tool_choice": "required", "tools": [{"type": "function", "name": "get_weather",
                                                  "parameters": PARAMETERS}]}
    response = client.post("/v1/responses", json=body)
    assert response.status_code == 200, response.text
    kinds = [item["type"] for item in response.json()["output"]]
    assert "function_call" in kinds, response.json()


@pytest.mark.parametrize("choice", [{"type": "any"}, {"type": "tool", "name": "get_weather"}])
def test_messages_forced_choice_is_a_tool_use(client: TestClient, choice: Any) -> None:
    body = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 48,
            "temperature": 0, "tool_choice": choice,
            "tools": [{"name": "get_weather", "input_schema": PARAMETERS}]}
    message = client.post("/v1/messages", json=body).json()
    assert message["stop_reason"] == "tool_use", message
    use = next(block for block in message["content"] if block["type"] == "tool_use")
    jsonschema.validate(use["input"], PARAMETERS)
