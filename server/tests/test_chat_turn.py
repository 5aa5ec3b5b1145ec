"""One chat turn for every family (``chat/turn.py``), end to end through the app on the fixture
model: ``--chat-template`` seen by the first request of each family and by ``/props``,
``--chat-template-kwargs`` reaching Messages and Responses, a Messages prefill continued with
or without ``--prefill-assistant``, Anthropic's ``thinking: disabled`` (and ``thinking``
omitted) rendered as chat's ``enable_thinking: false`` (no reasoning generated), and the
``tool_choice`` refusals worded alike on Chat, Responses and Messages, each in its family's
error shape."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.chat.template import apply_template_override, render_chat
from mlxcel.config import ServerConfig
from mlxcel.engine.loaded_model import load_model
from mlxcel.engine.worker import Engine, EngineConfig

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")
# A template of our own: every message gets a prefix the model's template does not render.
CUSTOM = ("{% for m in messages %}<|im_start|>{{ m.role }}\nserved by mlxcel: {{ m.content }}"
          "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n"
          "{% endif %}")
HI = [{"role": "user", "content": "Hi there"}]
THINK = [{"role": "user", "content": "What is 2 plus 2? Think first."}]
TOOL: dict[str, Any] = {"type": "function", "function": {"name": "get_weather",
                                                         "parameters": {"type": "object"}}}

Client = Callable[..., TestClient]


@pytest.fixture()
def serve() -> Iterator[Client]:
    """A fresh server per call (the first request matters here), closed at the test's end."""
    opened: list[TestClient] = []

    def start(**config: Any) -> TestClient:
        engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=2,
                                     cache_prompt=False))
        client = TestClient(create_app(ServerConfig(model=MODEL, ctx_size=4096, parallel=2,
                                                    **config), engine))
        client.__enter__()
        opened.append(client)
        assert engine.wait_ready(60)
        return client

    yield start
    for client in opened:
        client.__exit__(None, None, None)


@pytest.fixture(scope="module")
def custom_count() -> int:
    """The tokens ``CUSTOM`` renders for ``HI``, counted outside the server."""
    model = load_model(MODEL)
    apply_template_override(model, CUSTOM)
    return len(render_chat(model, HI).tokens)


def _chat_count(client: TestClient) -> int:
    body = client.post("/v1/chat/completions/input_tokens", json={"messages": HI}).json()
    return int(body["input_tokens"])


def _messages_count(client: TestClient) -> int:
    body = client.post("/v1/messages/count_tokens", json={"messages": HI}).json()
    return int(body["input_tokens"])


def _responses_count(client: TestClient) -> int:
    body = client.post("/v1/responses/input_tokens", json={"input": "Hi there"}).json()
    return int(body["input_tokens"])


def _chat_prompt(client: TestClient) -> int:
    body = client.post("/v1/chat/completions", json={"messages": HI, "max_tokens": 1}).json()
    return int(body["usage"]["prompt_tokens"])


def _messages_prompt(client: TestClient) -> int:
    body = client.post("/v1/messages", json={"messages": HI, "max_tokens": 1}).json()
    return int(body["usage"]["input_tokens"])


def _responses_prompt(client: TestClient) -> int:
    body = client.post("/v1/responses", json={"input": "Hi there",
                                              "max_output_tokens": 1}).json()
    return int(body["usage"]["input_tokens"])


FIRST_REQUESTS = {"chat": _chat_prompt, "chat_count": _chat_count,
                  "messages": _messages_prompt, "messages_count": _messages_count,
                  "responses": _responses_prompt, "responses_count": _responses_count}


@pytest.mark.parametrize("first", sorted(FIRST_REQUESTS))
def test_chat_template_applies_from_the_first_request(serve: Client, custom_count: int,
                                                      first: str) -> None:
    client = serve(chat_template=CUSTOM)
    assert FIRST_REQUESTS[first](client) == custom_count
    # ... and every other family agrees afterwards
    assert {name: count(client) for name, count in FIRST_REQUESTS.items()} == \
        dict.fromkeys(FIRST_REQUESTS, custom_count)


def test_props_and_apply_template_show_the_server_template_first(serve: Client) -> None:
    client = serve(chat_template=CUSTOM)
    assert client.get("/props").json()["chat_template"] == CUSTOM
    prompt = client.post("/apply-template", json={"messages": HI}).json()["prompt"]
    assert prompt.startswith("<|im_start|>user\nserved by mlxcel: Hi there")


def test_an_engine_loaded_before_the_app_gets_the_template_too() -> None:
    engine = Engine(EngineConfig(model=MODEL, parallel=1, cache_prompt=False))
    engine.start()
    try:
        assert engine.wait_ready(60)
        create_app(ServerConfig(model=MODEL, chat_template=CUSTOM), engine)
        assert engine.require_model().chat_template == CUSTOM
    finally:
        engine.stop()


def test_the_model_template_without_the_flag(serve: Client, custom_count: int) -> None:
    client = serve()
    assert client.get("/props").json()["chat_template"] not in ("", CUSTOM)
    assert _messages_count(client) != custom_count


def _messages(client: TestClient, thinking: str | None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"messages": THINK, "max_tokens": 40, "temperature": 0, **fields}
    if thinking == "enabled":
        body["thinking"] = {"type": "enabled", "budget_tokens": 1024}
    elif thinking is not None:
        body["thinking"] = {"type": thinking}
    response = client.post("/v1/messages", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _chat_no_thinking(client: TestClient) -> dict[str, Any]:
    response = client.post("/v1/chat/completions", json={
        "messages": THINK, "max_tokens": 40, "temperature": 0,
        "chat_template_kwargs": {"enable_thinking": False}})
    assert response.status_code == 200, response.text
    return dict(response.json()["usage"])


@pytest.mark.parametrize("off", ["disabled", None])
def test_messages_thinking_disabled_or_omitted_generates_no_reasoning(serve: Client,
                                                                      off: str | None) -> None:
    client = serve()
    enabled = _messages(client, "enabled")["usage"]
    assert enabled["output_tokens_details"]["thinking_tokens"] > 0
    disabled = _messages(client, off)
    usage = disabled["usage"]
    assert usage["output_tokens_details"]["thinking_tokens"] == 0
    assert [b["type"] for b in disabled["content"]] == ["text"]
    chat = _chat_no_thinking(client)
    # the same prompt as chat's enable_thinking: false, so the same generation
    assert (usage["input_tokens"], usage["output_tokens"]) == \
        (chat["prompt_tokens"], chat["completion_tokens"])
    thinking = {} if off is None else {"thinking": {"type": off}}
    counted = client.post("/v1/messages/count_tokens", json={
        "messages": THINK, **thinking}).json()["input_tokens"]
    assert counted == usage["input_tokens"]


def test_messages_without_thinking_do_not_think_whatever_the_server_default(
        serve: Client) -> None:
    # Anthropic's models think only when asked (thinking.type enabled or adaptive)
    client = serve(chat_template_kwargs={"enable_thinking": True})
    chat = client.post("/v1/chat/completions", json={
        "messages": THINK, "max_tokens": 40, "temperature": 0}).json()["usage"]
    assert chat["completion_tokens_details"]["reasoning_tokens"] > 0
    usage = _messages(client, None)["usage"]
    assert usage["output_tokens_details"]["thinking_tokens"] == 0
    assert usage["output_tokens_details"] == _messages(client, "disabled")["usage"][
        "output_tokens_details"]


def test_responses_reasoning_effort_none_generates_no_reasoning(serve: Client) -> None:
    client = serve()
    body = {"input": THINK[0]["content"], "max_output_tokens": 40, "temperature": 0}
    thinking = client.post("/v1/responses", json=body).json()["usage"]
    assert thinking["output_tokens_details"]["reasoning_tokens"] > 0
    usage = client.post("/v1/responses", json={**body, "reasoning": {"effort": "none"}}
                        ).json()["usage"]
    assert usage["output_tokens_details"]["reasoning_tokens"] == 0
    chat = _chat_no_thinking(client)
    assert (usage["input_tokens"], usage["output_tokens"]) == \
        (chat["prompt_tokens"], chat["completion_tokens"])


def test_server_template_kwargs_reach_messages_and_responses(serve: Client) -> None:
    client = serve(chat_template_kwargs={"enable_thinking": False})
    chat = client.post("/v1/chat/completions", json={
        "messages": THINK, "max_tokens": 40, "temperature": 0}).json()["usage"]
    messages = _messages(client, None)["usage"]
    assert messages["output_tokens_details"]["thinking_tokens"] == 0
    assert messages["input_tokens"] == chat["prompt_tokens"]
    responses = client.post("/v1/responses", json={
        "input": THINK[0]["content"], "max_output_tokens": 40, "temperature": 0}).json()
    assert responses["usage"]["output_tokens_details"]["reasoning_tokens"] == 0
    assert responses["usage"]["input_tokens"] == chat["prompt_tokens"]
    # the request's own switch wins over the server default
    enabled = _messages(client, "enabled")["usage"]
    assert enabled["output_tokens_details"]["thinking_tokens"] > 0


def test_messages_continue_a_prefill_whatever_the_flag(serve: Client) -> None:
    prefilled = [*HI, {"role": "assistant", "content": "Hello"}]
    plain = serve()
    client = serve(prefill_assistant=True)

    def count(c: TestClient) -> int:
        return int(c.post("/v1/messages/count_tokens",
                          json={"messages": prefilled}).json()["input_tokens"])

    # continued on both (Anthropic's prefill): no end of turn after "Hello", no new turn
    assert count(client) == count(plain)
    chat = client.post("/v1/chat/completions/input_tokens", json={"messages": prefilled})
    assert chat.json()["input_tokens"] == count(client)
    # chat continues only with the flag
    unflagged = plain.post("/v1/chat/completions/input_tokens", json={"messages": prefilled})
    assert unflagged.json()["input_tokens"] > count(plain)


def _chat_error(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/chat/completions", json={"messages": HI, **fields})
    assert response.status_code == 400, response.text
    return dict(response.json()["error"])


def _responses_error(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/responses", json={"input": "Hi there", **fields})
    assert response.status_code == 400, response.text
    return dict(response.json()["error"])


def _messages_error(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/messages", json={"messages": HI, "max_tokens": 8, **fields})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    return dict(body["error"])


def test_tool_choice_refusals_read_alike(serve: Client) -> None:
    client = serve()
    required = "tool_choice 'required' needs at least one tool."
    assert _chat_error(client, tool_choice="required")["message"] == required
    assert _responses_error(client, tool_choice="required")["message"] == required
    # Anthropic's spec admits tool_choice with no tools declared: nothing to force, a 200
    plain = client.post("/v1/messages", json={"messages": HI, "max_tokens": 8,
                                              "tool_choice": {"type": "any"}})
    assert plain.status_code == 200, plain.text

    undeclared = "tool_choice names function 'nope', which is not declared in tools."
    chat = _chat_error(client, tools=[TOOL], tool_choice={
        "type": "function", "function": {"name": "nope"}})
    assert (chat["message"], chat["param"]) == (undeclared, "tool_choice")
    responses = _responses_error(client, tools=[{"type": "function", **TOOL["function"]}],
                                 tool_choice={"type": "function", "name": "nope"})
    assert (responses["message"], responses["param"]) == (undeclared, "tool_choice")
    anthropic_tool = {"name": "get_weather", "input_schema": {"type": "object"}}
    messages = _messages_error(client, tools=[anthropic_tool],
                               tool_choice={"type": "tool", "name": "nope"})
    assert messages["message"] == undeclared

    combined = "A forced tool_choice cannot be combined with a constraining output format."
    schema = {"type": "object"}
    chat = _chat_error(client, tools=[TOOL], tool_choice="required", response_format={
        "type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert chat["message"] == combined
    responses = _responses_error(
        client, tools=[{"type": "function", **TOOL["function"]}], tool_choice="required",
        text={"format": {"type": "json_schema", "name": "x", "schema": schema}})
    assert responses["message"] == combined


def test_forced_tool_choice_is_counted_as_generated(serve: Client) -> None:
    """count_tokens renders the forced choice's instruction, as /v1/messages does."""
    client = serve()
    body = {"messages": HI, "tools": [{"name": "get_weather",
                                       "input_schema": {"type": "object"}}],
            "tool_choice": {"type": "any"}}
    counted = client.post("/v1/messages/count_tokens", json=body).json()["input_tokens"]
    created = client.post("/v1/messages", json={**body, "max_tokens": 1}).json()
    assert counted == created["usage"]["input_tokens"]
    auto = client.post("/v1/messages/count_tokens",
                       json={**body, "tool_choice": {"type": "auto"}}).json()["input_tokens"]
    assert counted > auto
