"""Anthropic prefill on ``/v1/messages``: a trailing ``assistant`` message is continued (the
answer holds the continuation only), with no server flag, as Anthropic's API reference says
(Messages, ``messages``); streamed and counted alike. What cannot be continued (two
assistant messages last, or tool calls) starts a new turn. Chat keeps its own rule: without
``--prefill-assistant`` a trailing assistant message there is followed by a new turn."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")
HELLO = [{"role": "user", "content": "Say hello."}]
GREEDY = {"max_tokens": 12, "temperature": 0}
# no ``thinking``: Anthropic's model does not think, as chat's enable_thinking: false below
MESSAGES = GREEDY


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=512, parallel=1)  # no --prefill-assistant
    engine = Engine(EngineConfig(model=MODEL, ctx_size=512, parallel=1, cache_prompt=False))
    with TestClient(create_app(config, engine)) as served:
        assert engine.wait_ready(60)
        yield served


def _message(client: TestClient, messages: list[dict[str, Any]], **fields: Any
             ) -> dict[str, Any]:
    response = client.post("/v1/messages", json={"messages": messages, **MESSAGES, **fields})
    assert response.status_code == 200, response.text
    return dict(response.json())


def _text(message: dict[str, Any]) -> str:
    return "".join(b["text"] for b in message["content"] if b["type"] == "text")


def _chat(client: TestClient, messages: list[dict[str, Any]], **fields: Any) -> str:
    response = client.post("/v1/chat/completions", json={
        "messages": messages, **GREEDY, "chat_template_kwargs": {"enable_thinking": False},
        **fields})
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


@pytest.fixture(scope="module")
def prefilled(client: TestClient) -> list[dict[str, Any]]:
    """The conversation with the first word of the model's own reply as the prefill."""
    head = _text(_message(client, HELLO)).split()[0]
    return [*HELLO, {"role": "assistant", "content": head}]


def test_a_trailing_assistant_message_is_continued(client: TestClient,
                                                   prefilled: list[dict[str, Any]]) -> None:
    answer = _text(_message(client, prefilled))
    # the continuation chat renders when asked to continue: the same prompt, the same tokens
    assert answer == _chat(client, prefilled, continue_final_message=True)
    assert answer != _chat(client, prefilled)  # chat, unflagged, starts a new turn
    assert not answer.startswith(prefilled[-1]["content"])  # the prefill is not repeated


def test_a_prefill_in_blocks_streams_and_counts_alike(client: TestClient,
                                                      prefilled: list[dict[str, Any]]) -> None:
    blocks: list[dict[str, Any]] = [*HELLO, {"role": "assistant",
                                             "content": [{"type": "text",
                                                          "text": prefilled[-1]["content"]}]}]
    body = _message(client, blocks)
    assert _text(body) == _text(_message(client, prefilled))
    with client.stream("POST", "/v1/messages", json={"messages": blocks, **MESSAGES,
                                                      "stream": True}) as response:
        events = [json.loads(line[len("data: "):]) for line in response.iter_lines()
                  if line.startswith("data: ")]
    assert "".join(e["delta"]["text"] for e in events if e["type"] == "content_block_delta"
                   and e["delta"]["type"] == "text_delta") == _text(body)
    counted = client.post("/v1/messages/count_tokens", json={"messages": blocks}).json()
    assert counted["input_tokens"] == body["usage"]["input_tokens"]
    chat = client.post("/v1/chat/completions/input_tokens", json={
        "messages": prefilled, "continue_final_message": True,
        "chat_template_kwargs": {"enable_thinking": False}}).json()
    assert counted["input_tokens"] == chat["input_tokens"]  # no new assistant turn counted


@pytest.mark.parametrize("last", [
    [{"role": "assistant", "content": "Hi."}, {"role": "assistant", "content": "Hello"}],
    [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f",
                                        "input": {}}]}],
])
def test_what_cannot_be_continued_starts_a_new_turn(client: TestClient,
                                                   last: list[dict[str, Any]]) -> None:
    """Anthropic's schema admits these; they are answered as a new turn, not continued."""
    response = client.post("/v1/messages", json={"messages": [*HELLO, *last], **MESSAGES})
    assert response.status_code == 200, response.text
    assert response.json()["type"] == "message"


def test_an_empty_prefill_is_a_new_turn(client: TestClient) -> None:
    empty = _message(client, [*HELLO, {"role": "assistant", "content": ""}])
    assert _text(empty) == _chat(client, [*HELLO, {"role": "assistant", "content": ""}])
