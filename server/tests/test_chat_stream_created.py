"""One stream, one ``created``: OpenAI's chunk ``created`` is the same on every chunk of a chat
stream (CreateChatCompletionStreamResponse, ``created``: "Each chunk has the same timestamp").
With ``n`` choices each choice has its own encoder, and the usage chunk another: on a real model
a stream spans seconds, so each used to stamp its own time."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.families.openai_chat import render

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=4096, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


class _Ticking:
    """A clock for the chunk encoders that moves one second each time it is read, as a slow
    model's stream does between its encoders."""

    def __init__(self) -> None:
        self._seconds = itertools.count(1_800_000_000)

    def time(self) -> float:
        return float(next(self._seconds))


def test_every_chunk_of_an_n_stream_carries_one_created(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(render, "time", _Ticking())
    body = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 4,
            "temperature": 0, "n": 2, "stream": True, "stream_options": {"include_usage": True}}
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        assert response.status_code == 200
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: {")]
    chunks = [json.loads(line) for line in lines]
    assert {c["choices"][0]["index"] for c in chunks if c["choices"]} == {0, 1}
    assert len({c["created"] for c in chunks}) == 1, [c["created"] for c in chunks]
