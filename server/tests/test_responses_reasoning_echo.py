"""The Response's ``reasoning`` echoes the request's Reasoning object (OpenAI's API reference,
Responses, the Response object: ``reasoning.effort``, ``reasoning.summary``), in the JSON
answer, the streamed ``response.created``/``response.completed`` and the stored response;
null where not sent; a value outside OpenAI's enums is a 400 naming it."""

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
BODY = {"input": "Say hello.", "max_output_tokens": 4, "temperature": 0}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=512, parallel=1)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=512, parallel=1, cache_prompt=False))
    with TestClient(create_app(config, engine)) as served:
        assert engine.wait_ready(60)
        yield served


def _create(client: TestClient, **fields: Any) -> dict[str, Any]:
    response = client.post("/v1/responses", json={**BODY, **fields})
    assert response.status_code == 200, response.text
    return dict(response.json())


@pytest.mark.parametrize(("sent", "echoed"), [
    (None, {"effort": None, "summary": None}),
    ({"effort": "low", "summary": "auto"}, {"effort": "low", "summary": "auto"}),
    ({"effort": "none"}, {"effort": "none", "summary": None}),
    ({"generate_summary": "concise"}, {"effort": None, "summary": "concise"}),
])
def test_the_request_reasoning_is_echoed(client: TestClient, sent: dict[str, Any] | None,
                                         echoed: dict[str, Any]) -> None:
    fields = {} if sent is None else {"reasoning": sent}
    body = _create(client, **fields)
    assert body["reasoning"] == echoed
    stored = client.get(f"/v1/responses/{body['id']}").json()
    assert stored["reasoning"] == echoed
    with client.stream("POST", "/v1/responses", json={**BODY, **fields,
                                                       "stream": True}) as response:
        events = [json.loads(line[len("data: "):]) for line in response.iter_lines()
                  if line.startswith("data: ")]
    finals = [e["response"] for e in events
              if e["type"] in ("response.created", "response.completed",
                               "response.incomplete")]
    assert len(finals) == 2 and all(r["reasoning"] == echoed for r in finals)


@pytest.mark.parametrize(("sent", "param"), [
    ({"effort": "huge"}, "reasoning.effort"),
    ({"summary": "long"}, "reasoning.summary"),
    ({"generate_summary": 3}, "reasoning.generate_summary"),
])
def test_a_value_outside_the_enums_is_a_400(client: TestClient, sent: dict[str, Any],
                                            param: str) -> None:
    response = client.post("/v1/responses", json={**BODY, "reasoning": sent})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == param
