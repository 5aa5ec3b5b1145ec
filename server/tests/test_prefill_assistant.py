"""``--prefill-assistant`` (llama-server's default, off in mlxcel): a chat that ends on an
assistant message continues it, as ``continue_final_message: true`` does, whatever
``add_generation_prompt`` says; two assistant messages at the end, or a last one with tool
calls, are a 400; one with nothing to continue starts a new turn. Without the flag a trailing
assistant message is followed by a new turn, as in OpenAI's API."""

from __future__ import annotations

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


def _serve(prefill: bool) -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=512, parallel=1, prefill_assistant=prefill)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=512, parallel=1, cache_prompt=False))
    with TestClient(create_app(config, engine)) as client:
        assert engine.wait_ready(60)
        yield client


@pytest.fixture(scope="module")
def prefilling() -> Iterator[TestClient]:
    yield from _serve(True)


@pytest.fixture(scope="module")
def plain() -> Iterator[TestClient]:
    yield from _serve(False)


def _chat(client: TestClient, messages: list[dict[str, Any]], **fields: Any) -> Any:
    return client.post("/v1/chat/completions", json={
        "messages": messages, "max_tokens": 6, "temperature": 0, **fields})


def _answer(client: TestClient, messages: list[dict[str, Any]], **fields: Any) -> str:
    response = _chat(client, messages, **fields)
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


def _head(client: TestClient) -> str:
    return _answer(client, HELLO, max_tokens=8)[:10]


@pytest.mark.parametrize("fields", [{}, {"add_generation_prompt": True},
                                    {"continue_final_message": False}])
def test_a_trailing_assistant_message_is_continued(prefilling: TestClient,
                                                   plain: TestClient,
                                                   fields: dict[str, Any]) -> None:
    messages = [*HELLO, {"role": "assistant", "content": _head(prefilling)}]
    asked = _answer(plain, messages, continue_final_message=True)
    assert _answer(prefilling, messages, **fields) == asked
    assert _answer(plain, messages) != asked  # a new turn without the flag


@pytest.mark.parametrize("last", [
    [{"role": "assistant", "content": "Hi."}, {"role": "assistant", "content": "Hello"}],
    [{"role": "assistant", "content": None, "tool_calls": [{
        "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
])
def test_what_cannot_be_prefilled_is_a_400(prefilling: TestClient,
                                           last: list[dict[str, Any]]) -> None:
    response = _chat(prefilling, [*HELLO, *last])
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] in ("messages", "continue_final_message")


def test_nothing_to_continue_is_a_new_turn(prefilling: TestClient) -> None:
    empty = _answer(prefilling, [*HELLO, {"role": "assistant", "content": ""}])
    assert empty == _answer(prefilling, [*HELLO, {"role": "assistant", "content": ""}],
                            add_generation_prompt=True)
