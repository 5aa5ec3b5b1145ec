"""The keys Anthropic's ``Message`` and ``Usage`` require (its API reference, "Messages";
anthropic-sdk-python's generated types/message.py and types/usage.py): ``container`` (null:
no container tool) and ``usage.output_tokens_details`` with the thinking tokens counted from
the token stream, in the JSON answer and in the stream's message_start and message_delta."""

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
THINK = [{"role": "user", "content": "What is 2 plus 2? Think first."}]
BODY: dict[str, Any] = {"model": "m", "max_tokens": 40, "messages": THINK, "temperature": 0,
                        "thinking": {"type": "enabled", "budget_tokens": 1024}}
USAGE_KEYS = {"input_tokens", "output_tokens", "cache_creation_input_tokens",
              "cache_read_input_tokens", "cache_creation", "inference_geo", "service_tier",
              "server_tool_use", "output_tokens_details"}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=4096, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as c:
        assert engine.wait_ready(60)
        yield c


def _events(client: TestClient) -> list[dict[str, Any]]:
    response = client.post("/v1/messages", json={**BODY, "stream": True})
    assert response.status_code == 200
    return [json.loads(line[len("data: "):]) for line in response.text.splitlines()
            if line.startswith("data: ")]


def test_json_message_has_container_and_thinking_tokens(client: TestClient) -> None:
    message = client.post("/v1/messages", json=BODY).json()
    assert "container" in message and message["container"] is None
    usage = message["usage"]
    assert USAGE_KEYS <= set(usage)
    thinking = usage["output_tokens_details"]["thinking_tokens"]
    assert 0 < thinking < usage["output_tokens"]
    cut = client.post("/v1/messages", json={**BODY, "thinking": {"type": "enabled",
                                                                  "budget_tokens": 0}}).json()
    assert cut["usage"]["output_tokens_details"]["thinking_tokens"] < thinking


def test_stream_carries_the_same_keys(client: TestClient) -> None:
    events = _events(client)
    start = events[0]["message"]
    assert start["container"] is None and USAGE_KEYS <= set(start["usage"])
    delta = next(e for e in events if e["type"] == "message_delta")
    assert delta["delta"]["container"] is None
    assert {"server_tool_use", "output_tokens_details"} <= set(delta["usage"])
    whole = client.post("/v1/messages", json=BODY).json()["usage"]
    assert delta["usage"]["output_tokens_details"] == whole["output_tokens_details"]


def test_anthropic_sdk_reads_the_keys(client: TestClient) -> None:
    from anthropic import Anthropic

    sdk = Anthropic(api_key="unused", base_url=str(client.base_url), http_client=client,
                    _strict_response_validation=True)
    # this SDK's create() has no temperature argument: sent as a body field all the same
    fields = {k: v for k, v in BODY.items() if k != "temperature"}
    message = sdk.messages.create(**fields, extra_body={"temperature": 0})
    assert message.container is None
    details = message.usage.output_tokens_details
    assert details is not None and details.thinking_tokens > 0
