"""llama-server's ``return_progress`` on a /completion stream, with a small prefill chunk so
that a prompt is read in several steps: one ``prompt_progress`` partial before the prompt is
read (its cached part only), one after each chunk, the last once all of it is in the cache, all
before the first token; a cached prefix shows in ``cache`` and in the first ``processed``; both
lanes (a lone request and a batch) report alike."""

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
from mlxcel_conformance import spec

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")
CHUNK = 4
STORY = "Once upon a time there was a little robot who wanted to learn how to paint the sky."


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=512, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=512, parallel=2, cache_prompt=True,
                                 prefill_step_size=CHUNK))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


def _events(client: TestClient, **fields: Any) -> list[dict[str, Any]]:
    body = {"prompt": STORY, "n_predict": 3, "temperature": 0, "stream": True, **fields}
    with client.stream("POST", "/completion", json=body) as response:
        assert response.status_code == 200
        return [json.loads(line[6:]) for line in response.iter_lines()
                if line.startswith("data: ")]


def _progress(events: list[dict[str, Any]], index: int = 0) -> list[dict[str, Any]]:
    """One prompt's progress, checked against its stream: every partial before its first
    token, the counts consistent and growing, the last one the whole prompt."""
    own = [e for e in events if e["index"] == index]
    first_token = next(i for i, e in enumerate(own) if e["tokens"])
    progress = [e["prompt_progress"] for e in own if "prompt_progress" in e]
    assert all("prompt_progress" not in e for e in own[first_token:])
    assert all(not e["content"] and not e["tokens"] and e["stop"] is False
               for e in own if "prompt_progress" in e)
    total = own[-1]["tokens_evaluated"]
    assert all(set(p) == {"total", "cache", "processed", "time_ms"} for p in progress)
    assert all(p["total"] == total and p["cache"] == progress[0]["cache"] for p in progress)
    processed = [p["processed"] for p in progress]
    assert processed == sorted(set(processed)) and processed[-1] == total
    assert processed[0] == progress[0]["cache"]  # before reading: the cached part only
    times = [p["time_ms"] for p in progress]
    assert times == sorted(times) and times[0] >= 0
    return progress


def test_progress_after_every_prefill_chunk(client: TestClient) -> None:
    progress = _progress(_events(client, return_progress=True, cache_prompt=False))
    processed = [p["processed"] for p in progress]
    total = progress[-1]["total"]
    assert total > 3 * CHUNK and progress[0]["cache"] == 0
    assert len(processed) >= total // CHUNK  # one per chunk, not just the two ends
    assert max(b - a for a, b in zip(processed, processed[1:], strict=False)) <= CHUNK


def test_a_cached_prefix_counts_as_processed(client: TestClient) -> None:
    _events(client)  # fills the prompt cache
    progress = _progress(_events(client, return_progress=True))
    cache = progress[0]["cache"]
    assert 0 < cache < progress[-1]["total"] and progress[0]["processed"] == cache
    assert len(progress) < progress[-1]["total"] // CHUNK  # the cached part is not re-read


def test_the_batch_reports_alike(client: TestClient) -> None:
    """Two prompts in one request: the first starts on the single-sequence lane, the second
    in the batch (mlx-lm's BatchGenerator reports its chunks)."""
    events = _events(client, prompt=[STORY, STORY.upper()], return_progress=True,
                     cache_prompt=False)
    for index in (0, 1):
        assert len(_progress(events, index)) >= 3


@pytest.mark.parametrize("fields", [{}, {"return_progress": False}])
def test_no_progress_unless_asked(client: TestClient, fields: dict[str, Any]) -> None:
    assert not any("prompt_progress" in e for e in _events(client, **fields))


def test_no_progress_without_a_stream(client: TestClient) -> None:
    body = {"prompt": STORY, "n_predict": 2, "return_progress": True}
    assert "prompt_progress" not in client.post("/completion", json=body).json()


def _chat_chunks(client: TestClient, **fields: Any) -> list[dict[str, Any]]:
    body = {"messages": [{"role": "user", "content": STORY}], "max_tokens": 3,
            "temperature": 0, "stream": True, **fields}
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_chat_stream_reports_progress_as_llama_server_does(client: TestClient) -> None:
    """llama-server's web UI asks /v1/chat/completions for return_progress: chunks with an
    empty assistant delta and ``prompt_progress``, all before the first text."""
    chunks = _chat_chunks(client, return_progress=True, cache_prompt=False)
    first_text = next(i for i, c in enumerate(chunks)
                      if c["choices"] and c["choices"][0]["delta"].get("content"))
    progress = [c for c in chunks if "prompt_progress" in c]
    assert progress and all(chunks.index(c) < first_text for c in progress)
    assert all(c["object"] == "chat.completion.chunk" and c["choices"][0]["delta"] ==
               {"role": "assistant", "content": None} for c in progress)
    processed = [c["prompt_progress"]["processed"] for c in progress]
    total = progress[-1]["prompt_progress"]["total"]
    assert processed == sorted(set(processed)) and processed[-1] == total
    assert len(processed) >= total // CHUNK
    assert all(spec.validate_sse_event("POST", "/v1/chat/completions", json.dumps(c)) == []
               for c in chunks)
    assert not any("prompt_progress" in c for c in _chat_chunks(client))
