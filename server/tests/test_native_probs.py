"""llama-server's ``n_probs`` on /completion, on the real fixture: per-token probabilities in
the final object and in each streamed chunk, the sampled token among the alternatives."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")
BASE: dict[str, Any] = {"prompt": "Once upon a time", "n_predict": 6, "temperature": 0,
                        "cache_prompt": False}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=2048, parallel=1)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=2048, parallel=1, cache_prompt=False))
    with TestClient(create_app(config, engine)) as c:
        assert engine.wait_ready(60)
        yield c


def _check(entry: dict[str, Any], n: int) -> None:
    top = entry["top_logprobs"]
    assert len(top) == n
    assert [t["logprob"] for t in top] == sorted((t["logprob"] for t in top), reverse=True)
    assert all(t["logprob"] <= 0 and isinstance(t["id"], int) for t in top)
    # greedy: the sampled token is the most likely one
    assert top[0]["id"] == entry["id"] and math.isclose(top[0]["logprob"], entry["logprob"])
    assert bytes(entry["bytes"]).decode("utf-8", "replace") == entry["token"]


def test_n_probs_in_the_final_object(client: TestClient) -> None:
    body = client.post("/completion", json={**BASE, "n_probs": 3, "return_tokens": True}).json()
    probs = body["completion_probabilities"]
    assert [p["id"] for p in probs] == body["tokens"]
    for entry in probs:
        _check(entry, 3)
    assert body["generation_settings"]["n_probs"] == 3


def test_no_probabilities_without_n_probs(client: TestClient) -> None:
    assert "completion_probabilities" not in client.post("/completion", json=BASE).json()


def test_n_probs_streams_per_chunk(client: TestClient) -> None:
    with client.stream("POST", "/completion",
                       json={**BASE, "n_probs": 2, "stream": True}) as response:
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    chunks = [json.loads(line) for line in lines]
    partial = [c for c in chunks if not c["stop"]]
    assert partial and all(len(c["completion_probabilities"]) == len(c["tokens"])
                           for c in partial)
    for chunk in partial:
        for entry in chunk["completion_probabilities"]:
            _check(entry, 2)
    assert "completion_probabilities" not in chunks[-1]


def test_post_sampling_probs_is_a_400(client: TestClient) -> None:
    response = client.post("/completion",
                           json={**BASE, "n_probs": 2, "post_sampling_probs": True})
    assert response.status_code == 400
    error = response.json()["error"]  # llama-server's shape on its native route
    assert error["code"] == 400 and error["type"] == "invalid_request_error"
    assert "post_sampling_probs" in error["message"]
