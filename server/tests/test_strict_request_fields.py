"""Request values the spec calls invalid get a 400 in the route family's error shape, and the
values it was relaxed to admit (where the public API admits them) are answered.

Each refused value was once accepted (found by fuzzing the spec's invalid direction): ``null``
where OpenAI's or Anthropic's spec types a field without it, shapes of ``tools``,
``tool_choice``, ``response_format`` and ``text.format`` those specs require, llama-server's
boolean flags, ``n`` above 1 on ``/apply-template`` (llama-server's chat parser refuses it).
Two answered 500 before: a Responses ``text.format`` or tool ``type`` of the wrong type.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.families.embeddings.encoder_config import EncoderConfig

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
MODEL = str(MODELS / "qwen3-tiny")
HI = [{"role": "user", "content": "hi"}]
CHAT = {"messages": HI, "max_tokens": 1}
TOOL = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
ASSISTANT = {"role": "assistant", "content": None, "tool_calls": [CALL]}
COMPLETION = {"prompt": "hi", "max_tokens": 1}
RESPONSES = {"input": "hi", "max_output_tokens": 16}
FN_TOOL = {"type": "function", "name": "f", "parameters": {"type": "object"}}
MESSAGES = {"max_tokens": 1, "messages": HI}
CLIENT_TOOL = {"name": "f", "input_schema": {"type": "object"}}
NULL = "null is not allowed"
# llama-server's routes answer in its error shape: {"error": {"code", "message", "type"}}
NATIVE_ROUTES = {"/apply-template", "/embedding", "/completion"}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    encoders = EncoderConfig(embedding_model=str(MODELS / "bert-tiny-embed"),
                             rerank_model=str(MODELS / "bert-tiny-rerank"))
    config = ServerConfig(model=MODEL, ctx_size=512, parallel=2,
                          sections={"embeddings": encoders})
    engine = Engine(EngineConfig(model=MODEL, ctx_size=512, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


# (route, body, the error's param (OpenAI's shape), a fragment of its message)
OPENAI_REFUSALS: list[tuple[str, dict[str, Any], str, str]] = [
    ("/v1/chat/completions", {**CHAT, "model": None}, "model", NULL),
    ("/v1/chat/completions", {**CHAT, "user": None}, "user", NULL),
    ("/v1/chat/completions", {**CHAT, "stream_options": {"include_usage": None}},
     "stream_options.include_usage", NULL),
    ("/v1/chat/completions", {**CHAT, "messages": [{**HI[0], "name": None}]},
     "messages.0.name", NULL),
    ("/v1/chat/completions", {**CHAT, "messages": [{"role": "user", "content": []}]},
     "messages.0.content", "at least one part"),
    ("/v1/chat/completions", {**CHAT, "messages": [*HI, {**ASSISTANT, "tool_calls": [
        {"type": "function", "function": CALL["function"]}]}, *HI]},
     "messages.1.tool_calls.0.id", "Missing required parameter"),
    ("/v1/chat/completions", {**CHAT, "messages": [*HI, {**ASSISTANT, "tool_calls": [
        {**CALL, "function": {"name": "f", "arguments": {}}}]}, *HI]},
     "messages.1.tool_calls.0.function.arguments", "valid string"),
    ("/v1/chat/completions", {**CHAT, "messages": [*HI, {**ASSISTANT, "tool_calls": None}]},
     "messages.1.tool_calls", NULL),
    ("/v1/chat/completions", {**CHAT, "tools": None}, "tools", NULL),
    ("/v1/chat/completions", {**CHAT, "tool_choice": None}, "tool_choice", NULL),
    ("/v1/chat/completions", {**CHAT, "tools": [
        {**TOOL, "function": {"name": "f", "description": 5}}]},
     "tools.0.function.description", "must be a string"),
    ("/v1/chat/completions", {**CHAT, "tools": [
        {**TOOL, "function": {"name": "f", "parameters": None}}]},
     "tools.0.function.parameters", "JSON schema object"),
    ("/v1/chat/completions", {**CHAT, "tools": [
        {**TOOL, "function": {"name": "f", "strict": "yes"}}]},
     "tools.0.function.strict", "boolean or null"),
    ("/v1/chat/completions", {**CHAT, "response_format": {}}, "response_format",
     "string type"),
    ("/v1/chat/completions", {**CHAT, "response_format": None}, "response_format", NULL),
    ("/v1/chat/completions", {**CHAT, "response_format": {"type": "json_schema", "json_schema": {
        "schema": {"type": "object"}, "strict": "yes"}}},
     "response_format.json_schema.strict", "boolean or null"),
    ("/v1/chat/completions", {**CHAT, "chat_template_kwargs": None}, "chat_template_kwargs",
     NULL),
    ("/v1/chat/completions", {**CHAT, "chat_template_kwargs": {},
                              "extra_body": {"chat_template_kwargs": 5}},
     "extra_body.chat_template_kwargs", "must be an object"),
    ("/v1/chat/completions", {**CHAT, "chat_template_kwargs": {}, "preserve_thinking": "yes"},
     "preserve_thinking", "must be a boolean"),
    ("/v1/chat/completions", {**CHAT, "add_generation_prompt": "yes"},
     "add_generation_prompt", "valid boolean"),
    ("/v1/chat/completions", {**CHAT, "return_progress": 1}, "return_progress",
     "valid boolean"),
    ("/v1/chat/completions/input_tokens", {**CHAT, "timings_per_token": "yes"},
     "timings_per_token", "valid boolean"),
    ("/apply-template", {"messages": HI, "n": 99}, "n", "n must be at most"),
    ("/apply-template", {"messages": HI, "tool_choice": "sometimes"}, "tool_choice",
     "tool_choice must be"),
    ("/apply-template", {"messages": HI, "response_format": {"type": "json_schema"}},
     "response_format", "json_schema must be an object"),
    ("/apply-template", {"messages": HI, "thinking_budget_tokens": -5},
     "thinking_budget_tokens", "integer >= -1"),
    ("/apply-template", {"messages": HI, "extra_body": {"cache_prompt": "yes"}},
     "extra_body.cache_prompt", "must be a boolean"),
    ("/v1/completions", {**COMPLETION, "response_format": None}, "response_format", NULL),
    ("/v1/completions", {**COMPLETION, "user": None}, "user", NULL),
    ("/v1/completions", {**COMPLETION, "timings_per_token": "yes"}, "timings_per_token",
     "valid boolean"),
    ("/v1/embeddings", {"input": "hi", "model": None}, "model", NULL),
    ("/v1/embeddings", {"input": "hi", "encoding_format": None}, "encoding_format", NULL),
    ("/embedding", {"content": "hi", "embd_normalize": None}, "embd_normalize", NULL),
    ("/embedding", {"content": "hi", "input": []}, "input", "must not be empty"),
    ("/v1/rerank", {"query": "q", "documents": ["a"], "top_n": None}, "top_n", NULL),
    ("/v1/rerank", {"query": "q", "documents": ["a"], "texts": None}, "texts", NULL),
    ("/v1/responses", {**RESPONSES, "text": {"format": "json"}}, "text.format",
     "object with a string type"),
    ("/v1/responses", {**RESPONSES, "text": {"format": {"type": 5}}}, "text.format",
     "object with a string type"),
    ("/v1/responses", {**RESPONSES, "text": {"format": {
        "type": "json_schema", "schema": {"type": "object"}, "strict": 1}}},
     "text.format.strict", "boolean or null"),
    ("/v1/responses", {**RESPONSES, "tools": [{**FN_TOOL, "type": []}]}, "tools.0.type",
     "must be a string"),
    ("/v1/responses", {**RESPONSES, "tools": [{**FN_TOOL, "description": 5}]},
     "tools.0.description", "string or null"),
    ("/v1/responses/input_tokens", {**RESPONSES, "context_management": []},
     "context_management", "context_management must be"),
    ("/completion", {"prompt": {"prompt_string": "hi", "multimodal_data": 0}, "n_predict": 1},
     "prompt", "multimodal_data must be an array"),
]


@pytest.mark.parametrize(("route", "body", "param", "fragment"), OPENAI_REFUSALS,
                         ids=[f"{r} {p}" for r, _, p, _ in OPENAI_REFUSALS])
def test_refused_with_the_documented_400(client: TestClient, route: str, body: dict[str, Any],
                                         param: str, fragment: str) -> None:
    response = client.post(route, json=body)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    if route in NATIVE_ROUTES:
        assert error["code"] == 400
    else:
        assert error["param"] == param
    assert fragment in error["message"]


# Anthropic's shape: {"type": "error", "error": {"type", "message"}} (no param)
ANTHROPIC_REFUSALS: list[tuple[str, dict[str, Any], str]] = [
    ("/v1/messages", {**MESSAGES, "model": None}, "'model'"),
    ("/v1/messages", {**MESSAGES, "system": None}, "'system'"),
    ("/v1/messages", {**MESSAGES, "stream": None}, "'stream'"),
    ("/v1/messages", {**MESSAGES, "top_k": None}, "'top_k'"),
    ("/v1/messages", {**MESSAGES, "stop_sequences": None}, "'stop_sequences'"),
    ("/v1/messages", {**MESSAGES, "thinking": {"type": "sometimes"}}, "thinking.type"),
    ("/v1/messages", {**MESSAGES, "thinking": {"type": "enabled", "budget_tokens": None}},
     "thinking.budget_tokens"),
    ("/v1/messages", {**MESSAGES, "thinking": {"type": "enabled", "budget_tokens": 2},
                      "thinking_budget_tokens": -5}, "thinking_budget_tokens"),
    ("/v1/messages", {**MESSAGES, "tools": [CLIENT_TOOL], "tool_choice": {}},
     "tool_choice.type"),
    ("/v1/messages", {**MESSAGES, "tools": [CLIENT_TOOL], "tool_choice": {"type": "tool"}},
     "tool_choice.name"),
    ("/v1/messages", {**MESSAGES, "tools": [{}]}, "tools.0.name"),
    ("/v1/messages", {**MESSAGES, "tools": [{"name": "f"}]}, "tools.0.input_schema"),
    ("/v1/messages", {**MESSAGES, "tools": [{**CLIENT_TOOL, "name": "a b"}]}, "tools.0.name"),
    ("/v1/messages", {**MESSAGES, "tools": [{**CLIENT_TOOL, "description": 5}]},
     "tools.0.description"),
    ("/v1/messages", {**MESSAGES, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "hi", "citations": "none"}]}]}, "citations"),
    ("/v1/messages/count_tokens", {"messages": HI, "tool_choice": None}, "'tool_choice'"),
    ("/v1/messages/count_tokens", {"messages": HI, "tools": [{"name": "f",
                                                               "input_schema": None}]},
     "tools.0.input_schema"),
    # A server tool (a type of its own) is dropped, but only one of ToolUnion's shape: a string
    # type and name (found by `nox -s fuzz`: a number as the name was counted and answered).
    ("/v1/messages/count_tokens", {"messages": HI, "tools": [{"type": "web_search_20250305",
                                                               "name": 5}]}, "tools.0.name"),
    ("/v1/messages", {**MESSAGES, "tools": [{"type": 5, "name": "web_search"}]},
     "tools.0.type"),
    ("/v1/messages", {**MESSAGES, "tools": [{"type": "web_search_20250305"}]}, "tools.0.name"),
    # A client tool's type is custom or absent (the spec's AnthropicTools), never null: found
    # by `nox -s fuzz`'s later passes, count_tokens counted such a tool.
    ("/v1/messages/count_tokens", {"messages": HI, "tools": [{**CLIENT_TOOL, "type": None}]},
     "tools.0.type"),
    ("/v1/messages", {**MESSAGES, "tools": [{**CLIENT_TOOL, "type": None}]}, "tools.0.type"),
    # The spec's AnthropicThinking: budget_tokens an integer >= 0, counted or generated (found
    # by `nox -s fuzz`'s second pass: count_tokens counted a budget of -1 and answered).
    ("/v1/messages/count_tokens", {"messages": HI, "thinking": {"type": "enabled",
                                                                 "budget_tokens": -1}},
     "thinking.budget_tokens"),
    ("/v1/messages/count_tokens", {"messages": HI, "thinking": {"type": "disabled",
                                                                 "budget_tokens": "8"}},
     "thinking.budget_tokens"),
    ("/v1/messages", {**MESSAGES, "thinking": {"type": "enabled", "budget_tokens": 1.5}},
     "thinking.budget_tokens"),
    # Fields Anthropic's Messages API does not have (families/anthropic/foreign_fields.py):
    # a 200 ignoring or applying them would make the request mean something else here.
    ("/v1/messages", {**MESSAGES, "n": 3}, "n: Extra inputs are not permitted"),
    ("/v1/messages", {**MESSAGES, "adapters": "lora"}, "adapters: Extra inputs"),
    ("/v1/messages", {**MESSAGES, "logit_bias": {"1": 5}}, "logit_bias: Extra inputs"),
    ("/v1/messages", {**MESSAGES, "seed": 1}, "seed: Extra inputs"),
]


def test_anthropic_fields_the_server_does_not_implement_are_accepted(
        client: TestClient) -> None:
    """Anthropic's own fields (``metadata``, ``service_tier``) are not foreign: a 200."""
    body = {**MESSAGES, "metadata": {"user_id": "u"}, "service_tier": "auto"}
    assert client.post("/v1/messages", json=body).status_code == 200


@pytest.mark.parametrize(("route", "body", "fragment"), ANTHROPIC_REFUSALS,
                         ids=[f"{r} {f}" for r, _, f in ANTHROPIC_REFUSALS])
def test_refused_in_anthropic_shape(client: TestClient, route: str, body: dict[str, Any],
                                    fragment: str) -> None:
    response = client.post(route, json=body)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["type"] == "error"
    assert answer["error"]["type"] == "invalid_request_error"
    assert fragment in answer["error"]["message"]


# Values the spec now admits because the public API does (each was a 2xx before too).
ADMITTED: list[tuple[str, dict[str, Any]]] = [
    ("/v1/chat/completions", {**CHAT, "stream": None}),  # OpenAI: nullable
    ("/v1/completions", {**COMPLETION, "stream": None, "echo": None}),  # OpenAI: nullable
    ("/v1/completions", {**COMPLETION, "suffix": ""}),  # no suffix
    ("/v1/responses", {**RESPONSES, "conversation": None}),  # OpenAI: nullable
    # Open Responses' CreateResponseBody: nullable; a format's type defaults to text
    ("/v1/responses", {**RESPONSES, "model": None, "tools": None, "tool_choice": None}),
    ("/v1/responses", {**RESPONSES, "text": None}),
    ("/v1/responses", {**RESPONSES, "text": {"format": None}}),
    ("/v1/responses", {**RESPONSES, "text": {"format": {}}}),
    ("/v1/responses", {**RESPONSES, "tools": [{**FN_TOOL, "description": None,
                                               "parameters": None}]}),
    ("/v1/responses", {**RESPONSES, "tools": [FN_TOOL],
                       "tool_choice": {"type": "function", "name": "f"}}),
    ("/v1/responses", {**RESPONSES, "input": [
        {"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
        {"type": "function_call_output", "call_id": "c",
         "output": [{"type": "input_text", "text": "42"}]}]}),
    ("/v1/messages", {**MESSAGES, "thinking": {"type": "adaptive"}}),
    ("/v1/messages", {**MESSAGES, "tools": [CLIENT_TOOL],
                      "tool_choice": {"type": "tool", "name": "f"}}),
    ("/v1/messages", {**MESSAGES, "tools": [CLIENT_TOOL, {"type": "web_search_20250305",
                                                          "name": "web_search"}]}),
]


@pytest.mark.parametrize(("route", "body"), ADMITTED, ids=[r for r, _ in ADMITTED])
def test_what_the_public_api_admits_is_answered(client: TestClient, route: str,
                                                body: dict[str, Any]) -> None:
    response = client.post(route, json=body)
    assert response.status_code == 200, response.text
