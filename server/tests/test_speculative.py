"""Speculative decoding through the HTTP app on the real fixtures: greedy output with the draft
model (``qwen3-tiny-draft``) or prompt lookup is token for token the output without; the
``timings`` draft counters appear exactly where the reference says; per-request
``draft_model`` / ``num_draft_tokens`` follow mlx-lm's meaning without loading any file."""

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

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "models"
MODEL = str(FIXTURES / "qwen3-tiny")
DRAFT = str(FIXTURES / "qwen3-tiny-draft")
CHAT, COMPLETIONS, NATIVE = "/v1/chat/completions", "/v1/completions", "/completion"
PROMPTS = ["Tell me a story.", "Count to five.", "What is the weather in Paris?",
           "Describe a cat as JSON.", "the cat sat on the mat, the cat sat on the mat, the cat"]
DRAFT_FIELDS = {"draft_n", "draft_n_accepted", "draft_rounds", "draft_kind"}


def _client(**engine: Any) -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, parallel=2, draft_model=engine.get("draft_model"))
    eng = Engine(EngineConfig(model=MODEL, parallel=2, cache_prompt=False, **engine))
    with TestClient(create_app(config, eng)) as client:
        assert eng.wait_ready(60)
        yield client


@pytest.fixture(scope="module")
def plain() -> Iterator[TestClient]:
    yield from _client()


@pytest.fixture(scope="module")
def drafted() -> Iterator[TestClient]:
    yield from _client(draft_model=DRAFT)


@pytest.fixture(scope="module")
def lookup() -> Iterator[TestClient]:
    yield from _client(prompt_lookup=True, draft_max=4)


def _chat(client: TestClient, content: str, **fields: Any) -> Any:
    body = {"messages": [{"role": "user", "content": content}], "max_tokens": 120,
            "temperature": 0, **fields}
    response = client.post(CHAT, json=body)
    assert response.status_code == 200, response.text
    return response.json()


def _native_tokens(client: TestClient, prompt: str) -> tuple[list[int], dict[str, Any]]:
    body = {"prompt": prompt, "n_predict": 120, "temperature": 0, "return_tokens": True}
    response = client.post(NATIVE, json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    return data["tokens"], data["timings"]


def _sse(client: TestClient, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client.stream("POST", path, json={**body, "stream": True}) as response:
        assert response.status_code == 200
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return [json.loads(line[6:]) for line in lines if line != "data: [DONE]"]


# --- exactness ---------------------------------------------------------------------------

@pytest.mark.parametrize("drafter", ["drafted", "lookup"])
@pytest.mark.parametrize("prompt", PROMPTS)
def test_greedy_tokens_identical_with_and_without_drafter(
    request: pytest.FixtureRequest, plain: TestClient, drafter: str, prompt: str
) -> None:
    client: TestClient = request.getfixturevalue(drafter)
    want, plain_timings = _native_tokens(plain, prompt)
    got, timings = _native_tokens(client, prompt)
    assert got == want
    assert not DRAFT_FIELDS & set(plain_timings)
    if "draft_rounds" in timings:  # a drafter ran: its counters are consistent
        assert 0 <= timings["draft_n_accepted"] <= timings["draft_n"]
        assert timings["draft_rounds"] >= 1


@pytest.mark.parametrize("drafter", ["drafted", "lookup"])
def test_chat_reply_identical_and_mostly_accepted(
    request: pytest.FixtureRequest, plain: TestClient, drafter: str
) -> None:
    client: TestClient = request.getfixturevalue(drafter)
    content = "Tell me a story."
    want = _chat(plain, content)
    got = _chat(client, content)
    assert got["choices"][0]["message"] == want["choices"][0]["message"]
    assert got["usage"]["completion_tokens"] == want["usage"]["completion_tokens"]
    assert "timings" not in want
    timings = got["timings"]
    kind = "draft-model" if drafter == "drafted" else "prompt-lookup"
    assert timings["draft_kind"] == kind
    assert timings["predicted_n"] == got["usage"]["completion_tokens"]
    assert timings["prompt_n"] == got["usage"]["prompt_tokens"]
    if drafter == "drafted":  # the draft learned the same reply: most drafts are accepted
        assert timings["draft_n_accepted"] >= 0.8 * timings["draft_n"]


def test_concurrent_speculative_requests_stay_exact(drafted: TestClient,
                                                    plain: TestClient) -> None:
    """The second request finds the single-sequence lane taken and decodes in the batch."""
    from concurrent.futures import ThreadPoolExecutor

    want = [_chat(plain, p)["choices"][0]["message"]["content"] for p in PROMPTS[:3]]
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda p: _chat(drafted, p), PROMPTS[:3]))
    assert [g["choices"][0]["message"]["content"] for g in got] == want
    assert any("timings" in g for g in got)


# --- timings presence ----------------------------------------------------------------------

def test_timings_absent_when_drafting_is_off_or_ends_in_prefill(drafted: TestClient) -> None:
    assert "timings" not in _chat(drafted, "Tell me a story.", draft_model=None)
    assert "timings" not in _chat(drafted, "Tell me a story.", num_draft_tokens=0)
    assert "timings" not in _chat(drafted, "Tell me a story.", max_tokens=1)
    # Logits processors (here a repetition penalty) keep a request off the drafter.
    assert "timings" not in _chat(drafted, "Tell me a story.", repetition_penalty=1.1)


def test_chat_stream_timings_only_on_the_finish_chunk(drafted: TestClient) -> None:
    body = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 40,
            "temperature": 0, "stream_options": {"include_usage": True}}
    chunks = _sse(drafted, CHAT, body)
    with_timings = [c for c in chunks if "timings" in c]
    assert len(with_timings) == 1
    assert with_timings[0]["choices"][0]["finish_reason"] is not None
    assert DRAFT_FIELDS <= set(with_timings[0]["timings"])
    plain = _sse(drafted, CHAT, {**body, "draft_model": None})
    assert not any("timings" in c for c in plain)


def test_completions_timings_body_and_stream(drafted: TestClient) -> None:
    body = {"prompt": "Once upon a time", "max_tokens": 30, "temperature": 0}
    response = drafted.post(COMPLETIONS, json=body)
    assert response.status_code == 200
    assert response.json()["timings"]["draft_kind"] == "draft-model"
    chunks = _sse(drafted, COMPLETIONS, body)
    with_timings = [c for c in chunks if "timings" in c]
    assert len(with_timings) == 1 and with_timings[0]["choices"][0]["finish_reason"]
    off = drafted.post(COMPLETIONS, json={**body, "draft_model": None}).json()
    assert "timings" not in off


def test_native_completion_draft_fields(drafted: TestClient, plain: TestClient) -> None:
    _, timings = _native_tokens(drafted, "Once upon a time")
    assert DRAFT_FIELDS <= set(timings) and timings["draft_kind"] == "draft-model"
    chunks = _sse(drafted, NATIVE, {"prompt": "Once upon a time", "n_predict": 20,
                                    "temperature": 0})
    assert all(not DRAFT_FIELDS & set(c.get("timings", {})) for c in chunks[:-1])
    assert DRAFT_FIELDS <= set(chunks[-1]["timings"])
    _, plain_timings = _native_tokens(plain, "Once upon a time")
    assert not DRAFT_FIELDS & set(plain_timings)


# --- per-request fields --------------------------------------------------------------------

def test_draft_model_names_only_the_configured_model(drafted: TestClient,
                                                     plain: TestClient) -> None:
    for name in (DRAFT, "qwen3-tiny-draft"):
        assert "timings" in _chat(drafted, "Tell me a story.", max_tokens=20, draft_model=name)
    for other in (MODEL, "/etc", "../qwen3-tiny-draft", "some/hub-model"):
        response = drafted.post(CHAT, json={"messages": [{"role": "user", "content": "hi"}],
                                            "max_tokens": 2, "draft_model": other})
        assert response.status_code == 400, other
        assert response.json()["error"]["param"] == "draft_model"
    refused = plain.post(CHAT, json={"messages": [{"role": "user", "content": "hi"}],
                                     "max_tokens": 2, "draft_model": DRAFT})
    assert refused.status_code == 501
    assert refused.json()["error"]["type"] == "not_supported_error"


def test_num_draft_tokens_sizes_the_rounds(drafted: TestClient) -> None:
    one = _chat(drafted, "Tell me a story.", num_draft_tokens=1)["timings"]
    assert one["draft_n"] == one["draft_rounds"]
    five = _chat(drafted, "Tell me a story.", num_draft_tokens=5)["timings"]
    assert five["draft_rounds"] < one["draft_rounds"]


# --- the spec agrees -------------------------------------------------------------------------

def test_bodies_and_chunks_with_draft_timings_validate_against_the_spec(
    drafted: TestClient,
) -> None:
    from mlxcel_conformance import spec

    chat = _chat(drafted, "Tell me a story.", max_tokens=20)
    assert spec.validate_json("POST", CHAT, 200, chat, view=spec.REFERENCE) == []
    broken = {**chat, "timings": {k: v for k, v in chat["timings"].items() if k != "draft_n"}}
    assert spec.validate_json("POST", CHAT, 200, broken, view=spec.REFERENCE) != []
    # the drafter counters are an mlxcel extension: the public contract view does not ask them
    assert spec.validate_json("POST", CHAT, 200, broken) == []
    body = {"messages": [{"role": "user", "content": "Tell me a story."}], "max_tokens": 20,
            "temperature": 0}
    for chunk in _sse(drafted, CHAT, body):
        assert spec.validate_sse_event("POST", CHAT, json.dumps(chunk)) == []
    completion = drafted.post(COMPLETIONS, json={"prompt": "Once", "max_tokens": 20,
                                                 "temperature": 0}).json()
    assert spec.validate_json("POST", COMPLETIONS, 200, completion) == []
    native = drafted.post(NATIVE, json={"prompt": "Once", "n_predict": 20,
                                        "temperature": 0}).json()
    assert spec.validate_json("POST", NATIVE, 200, native) == []


def test_logprobs_match_plain_decoding(drafted: TestClient, plain: TestClient) -> None:
    fields = {"max_tokens": 24, "logprobs": True, "top_logprobs": 2}
    want = _chat(plain, "Tell me a story.", **fields)["choices"][0]["logprobs"]["content"]
    got_body = _chat(drafted, "Tell me a story.", **fields)
    got = got_body["choices"][0]["logprobs"]["content"]
    assert "timings" in got_body
    assert [e["token"] for e in got] == [e["token"] for e in want]
    for g, w in zip(got, want, strict=True):
        assert g["logprob"] == pytest.approx(w["logprob"], abs=1e-3)
        assert [t["token"] for t in g["top_logprobs"]] == [t["token"] for t in w["top_logprobs"]]
