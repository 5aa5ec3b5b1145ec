"""OpenAI's documented bounds on metadata, safety_identifier and top_logprobs, and mlxcel's on
the other identifier strings (protocol/field_limits.py): a value past one is a 400 naming the
field on every route that accepts it; the largest value within it is served and echoed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.families.responses.store_config import StoreConfig

EMOJI = "\U0001F600"  # one character, four bytes in UTF-8: bounds count characters
FULL_METADATA = {f"k{i:02d}" + "x" * 61: "v" * 512 for i in range(16)}


@pytest.fixture(scope="module")
def client(fixture_model: str) -> Iterator[TestClient]:
    engine = Engine(EngineConfig(model=fixture_model, parallel=1))
    config = ServerConfig(model=fixture_model, parallel=1,
                          sections={"responses": StoreConfig(store_path=":memory:")})
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


RESPONSES = {"input": "hi", "max_output_tokens": 1}
CHAT = {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1}

REFUSED = [
    ("/v1/responses", RESPONSES, "metadata", {f"k{i}": "v" for i in range(17)}),
    ("/v1/responses", RESPONSES, "metadata", {f"k{i}": "v" for i in range(40_000)}),
    ("/v1/responses", RESPONSES, "metadata", {"k" * 65: "v"}),
    ("/v1/responses", RESPONSES, "metadata", {"k": "v" * 513}),
    ("/v1/responses", RESPONSES, "metadata", {"k": 1}),
    ("/v1/responses", RESPONSES, "top_logprobs", 21),
    ("/v1/responses", RESPONSES, "top_logprobs", 2**63),
    ("/v1/responses", RESPONSES, "top_logprobs", -1),
    ("/v1/responses", RESPONSES, "user", EMOJI * 513),
    ("/v1/responses", RESPONSES, "prompt_cache_key", "p" * 1_000_000),
    ("/v1/responses", RESPONSES, "safety_identifier", "s" * 65),
    ("/v1/responses/input_tokens", {"input": "hi"}, "metadata",
     {f"k{i}": "v" for i in range(17)}),
    ("/v1/chat/completions", CHAT, "metadata", {f"k{i}": "v" for i in range(17)}),
    ("/v1/chat/completions", CHAT, "safety_identifier", "s" * 65),
    ("/v1/chat/completions", CHAT, "prompt_cache_key", "p" * 513),
    ("/v1/chat/completions", CHAT, "user", "u" * 513),
    ("/v1/chat/completions", CHAT, "top_logprobs", 21),
    ("/v1/completions", {"prompt": "hi", "max_tokens": 1}, "user", "u" * 513),
]


@pytest.mark.parametrize(("path", "body", "field", "value"), REFUSED,
                         ids=[f"{p}-{f}-{i}" for i, (p, _, f, _) in enumerate(REFUSED)])
def test_past_the_bound_is_a_400_naming_the_field(client: TestClient, path: str,
                                                  body: dict[str, Any], field: str,
                                                  value: Any) -> None:
    answer = client.post(path, json={**body, field: value})
    assert answer.status_code == 400, answer.text[:300]
    error = answer.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == field, error
    assert len(answer.content) < 2000  # the message quotes no megabyte back


def test_the_largest_values_within_the_bounds_are_served_and_echoed(client: TestClient) -> None:
    body = {**RESPONSES, "metadata": FULL_METADATA, "top_logprobs": 20, "user": EMOJI * 512,
            "prompt_cache_key": "p" * 512, "safety_identifier": "s" * 64}
    answer = client.post("/v1/responses", json=body)
    assert answer.status_code == 200, answer.text[:300]
    echoed = answer.json()
    assert echoed["metadata"] == FULL_METADATA
    assert (echoed["top_logprobs"], echoed["user"], echoed["prompt_cache_key"],
            echoed["safety_identifier"]) == (20, EMOJI * 512, "p" * 512, "s" * 64)
    chat = {**CHAT, "metadata": FULL_METADATA, "safety_identifier": "s" * 64,
            "prompt_cache_key": "p" * 512, "user": "u" * 512}
    assert client.post("/v1/chat/completions", json=chat).status_code == 200
