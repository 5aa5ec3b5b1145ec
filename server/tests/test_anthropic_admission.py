"""Anthropic-specific answers the engine's rules produce: a full prefill queue is 529
``overloaded_error`` on /v1/messages (503 ``server_busy`` on the OpenAI routes), and
count_tokens counts the forced-choice instruction /v1/messages adds to the prompt."""

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
WEATHER = {"name": "get_weather", "description": "Get the weather for a city.",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}},
                            "required": ["city"]}}
MESSAGE = {"messages": [{"role": "user", "content": "What is the weather in Paris?"}],
           "max_tokens": 4, "temperature": 0}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=4096, parallel=1)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=1, cache_prompt=False))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


@pytest.fixture
def full_queue(client: TestClient) -> Iterator[None]:
    """The prefill queue admits nothing (what a queue filled by other clients looks like to
    the next request, without the race of filling it from threads)."""
    engine = client.app.state.mlxcel.engine  # type: ignore[attr-defined]
    capacity = engine.queue.capacity
    engine.queue.capacity = 0
    try:
        yield
    finally:
        engine.queue.capacity = capacity


@pytest.mark.parametrize("path", ["/v1/messages", "/messages"])
@pytest.mark.parametrize("stream", [False, True])
def test_full_queue_is_529_overloaded_on_anthropic_routes(
    client: TestClient, full_queue: None, path: str, stream: bool
) -> None:
    response = client.post(path, json={**MESSAGE, "stream": stream})
    assert response.status_code == 529
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["type"] == "error"
    assert body["error"]["type"] == "overloaded_error"
    assert set(body["error"]) == {"type", "message"} and body["error"]["message"]


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/chat/completions", {"messages": MESSAGE["messages"], "max_tokens": 4}),
    ("/v1/completions", {"prompt": "hi", "max_tokens": 2}),
])
@pytest.mark.parametrize("stream", [False, True])
def test_full_queue_stays_503_server_busy_on_openai_routes(
    client: TestClient, full_queue: None, path: str, body: dict[str, Any], stream: bool
) -> None:
    response = client.post(path, json={**body, "stream": stream})
    assert response.status_code == 503
    assert response.json()["error"]["type"] == "server_busy"


def test_queue_admits_again_after_the_overload(client: TestClient) -> None:
    assert client.post("/v1/messages", json=MESSAGE).status_code == 200


@pytest.mark.parametrize("choice", [None, {"type": "auto"}, {"type": "none"}, {"type": "any"},
                                    {"type": "tool", "name": "get_weather"}])
def test_count_tokens_equals_the_real_prompt(client: TestClient,
                                             choice: dict[str, Any] | None) -> None:
    body: dict[str, Any] = {**MESSAGE, "tools": [WEATHER]}
    if choice is not None:
        body["tool_choice"] = choice
    counted = client.post("/v1/messages/count_tokens",
                          json={k: v for k, v in body.items() if k != "max_tokens"})
    assert counted.status_code == 200
    used = client.post("/v1/messages", json=body)
    assert used.status_code == 200
    assert counted.json()["input_tokens"] == used.json()["usage"]["input_tokens"]


def test_forced_choice_instruction_is_counted(client: TestClient) -> None:
    """The old count left the instruction out: a forced choice must count more tokens."""
    def count(choice: dict[str, Any]) -> int:
        response = client.post("/v1/messages/count_tokens",
                               json={"messages": MESSAGE["messages"], "tools": [WEATHER],
                                     "tool_choice": choice})
        return int(response.json()["input_tokens"])

    assert count({"type": "any"}) > count({"type": "auto"})
