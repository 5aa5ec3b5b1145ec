"""llama-server's ``n_probs`` on /completion, on the real fixture: per-token probabilities in
the final object and in each streamed chunk, the sampled token among the alternatives; with
``post_sampling_probs``, the probabilities of the distribution the sampler drew from."""

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


def _post(client: TestClient, **fields: Any) -> list[dict[str, Any]]:
    body = client.post("/completion", json={**BASE, "n_probs": 4, "post_sampling_probs": True,
                                            "return_tokens": True, **fields}).json()
    assert body["generation_settings"]["post_sampling_probs"] is True
    probs = body["completion_probabilities"]
    assert [p["id"] for p in probs] == body["tokens"]
    for entry in probs:  # README: prob instead of logprob, top_probs instead of top_logprobs
        assert "logprob" not in entry and "top_logprobs" not in entry
        assert 0.0 <= entry["prob"] <= 1.0
        assert set(entry["top_probs"][0]) == {"id", "token", "bytes", "prob"}
        assert entry["id"] in [t["id"] for t in entry["top_probs"]]
    return list(probs)


def test_post_sampling_probs_greedy_draws_one_token_for_sure(client: TestClient) -> None:
    for entry in _post(client):
        assert entry["prob"] == 1.0 and [t["prob"] for t in entry["top_probs"]] == [1.0]


def test_post_sampling_probs_after_top_k(client: TestClient) -> None:
    """top_k 2: at most two candidates, their probabilities summing to one, each at least
    its share before the filter (the model's own, from n_probs without the flag)."""
    fields = {"temperature": 1.0, "top_k": 2, "top_p": 1.0, "min_p": 0.0, "seed": 3}
    before = client.post("/completion", json={**BASE, "n_probs": 4, **fields}).json()
    after = _post(client, **fields)
    for entry, model in zip(after, before["completion_probabilities"], strict=True):
        top = entry["top_probs"]
        assert 1 <= len(top) <= 2 and math.isclose(sum(t["prob"] for t in top), 1.0,
                                                   rel_tol=1e-4)
        assert [t["id"] for t in top] == [t["id"] for t in model["top_logprobs"][:len(top)]]
        assert entry["prob"] >= math.exp(model["logprob"]) - 1e-6


def test_post_sampling_probs_stream_per_chunk(client: TestClient) -> None:
    with client.stream("POST", "/completion", json={
            **BASE, "n_probs": 2, "post_sampling_probs": True, "stream": True}) as response:
        chunks = [json.loads(line[6:]) for line in response.iter_lines()
                  if line.startswith("data: ")]
    partial = [c for c in chunks if not c["stop"]]
    assert partial and all(e["prob"] == 1.0 and "top_probs" in e
                           for c in partial for e in c["completion_probabilities"])
