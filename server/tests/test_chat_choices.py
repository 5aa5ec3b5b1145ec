"""Chat ``n`` on the real fixture (families/openai_chat/choices.py): n choices from one prompt,
each sampled on its own, usage summed as OpenAI sums it, stream chunks indexed; at most the
slot count. And the reasoning tokens counted from the engine's token stream."""

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
HELLO = [{"role": "user", "content": "Say hello."}]
THINK = [{"role": "user", "content": "What is 2 plus 2? Think first."}]
# A prompt the fixture was not trained on: its next-token distributions are wide.
WILD = [{"role": "user", "content": "zebra quantum violet 7"}]
GREEDY: dict[str, Any] = {"temperature": 0, "max_tokens": 12}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=4096, parallel=3)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=3, cache_prompt=False))
    with TestClient(create_app(config, engine)) as c:
        assert engine.wait_ready(60)
        yield c


def _chat(client: TestClient, **body: Any) -> dict[str, Any]:
    response = client.post("/v1/chat/completions", json={"messages": HELLO, **body})
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _chunks(client: TestClient, **body: Any) -> list[dict[str, Any]]:
    response = client.post("/v1/chat/completions",
                           json={"messages": HELLO, "stream": True, **body})
    assert response.status_code == 200, response.text
    lines = [line[len("data: "):] for line in response.text.splitlines()
             if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_greedy_n_gives_equal_choices_and_summed_usage(client: TestClient) -> None:
    one = _chat(client, **GREEDY)
    three = _chat(client, **GREEDY, n=3)
    assert [c["index"] for c in three["choices"]] == [0, 1, 2]
    texts = {c["message"]["content"] for c in three["choices"]}
    assert texts == {one["choices"][0]["message"]["content"]}
    usage, single = three["usage"], one["usage"]
    assert usage["prompt_tokens"] == single["prompt_tokens"]  # the prompt once
    assert usage["completion_tokens"] == 3 * single["completion_tokens"]
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_seeded_choices_differ_and_repeat(client: TestClient) -> None:
    body = {"messages": WILD, "temperature": 2.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
            "max_tokens": 12, "seed": 11, "n": 3}
    first, again = _chat(client, **body), _chat(client, **body)
    texts = [c["message"]["content"] for c in first["choices"]]
    assert texts == [c["message"]["content"] for c in again["choices"]]
    assert len(set(texts)) > 1  # each choice its own seed (11, 12, 13)
    alone = _chat(client, **{**body, "n": 1})
    assert alone["choices"][0]["message"]["content"] == texts[0]


def test_streamed_choices_carry_their_index(client: TestClient) -> None:
    chunks = _chunks(client, **GREEDY, n=2, stream_options={"include_usage": True})
    finishes = [c["choices"][0] for c in chunks if c["choices"]
                and c["choices"][0]["finish_reason"] is not None]
    assert sorted(choice["index"] for choice in finishes) == [0, 1]
    text = {i: "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks
                       if c["choices"] and c["choices"][0]["index"] == i) for i in (0, 1)}
    whole = _chat(client, **GREEDY, n=2)
    assert text == {c["index"]: c["message"]["content"] for c in whole["choices"]}
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"] == whole["usage"]


def test_n_beyond_the_slots_is_a_400(client: TestClient) -> None:
    response = client.post("/v1/chat/completions", json={"messages": HELLO, "n": 4})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "n"
    assert "at most 3" in response.json()["error"]["message"]


def test_openai_sdk_round_trip(client: TestClient) -> None:
    from openai import OpenAI

    sdk = OpenAI(api_key="unused", base_url=f"{client.base_url}/v1", http_client=client,
                 _strict_response_validation=True)
    completion = sdk.chat.completions.create(model="m", messages=HELLO,  # type: ignore[arg-type]
                                             n=3, temperature=0, max_tokens=8)
    assert [choice.index for choice in completion.choices] == [0, 1, 2]
    assert len({choice.message.content for choice in completion.choices}) == 1
    stream = sdk.chat.completions.create(model="m", messages=HELLO,  # type: ignore[arg-type]
                                         n=2, temperature=0, max_tokens=8, stream=True)
    assert {chunk.choices[0].index for chunk in stream if chunk.choices} == {0, 1}


def test_reasoning_tokens_come_from_the_token_stream(client: TestClient) -> None:
    body = {"messages": THINK, "temperature": 0, "max_tokens": 40}
    answer = client.post("/v1/chat/completions", json=body).json()
    reasoning = answer["usage"]["completion_tokens_details"]["reasoning_tokens"]
    assert "2 plus 2 equals 4" in answer["choices"][0]["message"]["reasoning_content"]
    # the block's tokens, its markers included, and fewer than all (an answer follows)
    assert 0 < reasoning < answer["usage"]["completion_tokens"]
    chunks = _chunks(client, **body, stream_options={"include_usage": True})
    assert chunks[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == reasoning
    cut = client.post("/v1/chat/completions", json={**body, "thinking_budget_tokens": 0}).json()
    assert cut["usage"]["completion_tokens_details"]["reasoning_tokens"] < reasoning


def test_completions_n_per_prompt(client: TestClient) -> None:
    """``/v1/completions``: ``n`` per prompt, prompt p's j-th choice at index p * n + j, each
    prompt counted once in usage."""
    def complete(**body: Any) -> dict[str, Any]:
        response = client.post("/v1/completions", json={"temperature": 0, "max_tokens": 6,
                                                        **body})
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    single = [complete(prompt=p) for p in ("Once upon", "The sky")]
    both = complete(prompt=["Once upon", "The sky"], n=2)
    assert [c["index"] for c in both["choices"]] == [0, 1, 2, 3]
    texts = [c["text"] for c in both["choices"]]
    assert texts == [single[0]["choices"][0]["text"]] * 2 + [single[1]["choices"][0]["text"]] * 2
    usage = both["usage"]
    assert usage["prompt_tokens"] == sum(s["usage"]["prompt_tokens"] for s in single)
    assert usage["completion_tokens"] == 2 * sum(s["usage"]["completion_tokens"]
                                                 for s in single)
    assert client.post("/v1/completions",
                       json={"prompt": "x", "n": 4}).json()["error"]["param"] == "n"
