"""Inputs that once answered 500 (issue 20, finding 7): each gets a 4xx in its family's error
shape, and a number JSON cannot carry as a finite double is refused before any generation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.errors import InvalidRequestError
from mlxcel.media.policy import MediaPolicy
from mlxcel.media.sources import read_media
from mlxcel_conformance.hostile import nested_schema, raw_json

LONE = "\ud800"
HUGE = 2**32
CHAT = "/v1/chat/completions"


@pytest.fixture(scope="module")
def client(fixture_model: str) -> Iterator[TestClient]:
    engine = Engine(EngineConfig(model=fixture_model, ctx_size=4096, parallel=2))
    with TestClient(create_app(ServerConfig(model=fixture_model), engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


def post(client: TestClient, path: str, body: bytes) -> Any:
    return client.post(path, content=body, headers={"Content-Type": "application/json"})


def openai_400(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["type"] == "invalid_request_error" and error["message"]
    return error


def anthropic_400(response: Any) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    error: dict[str, Any] = body["error"]
    return error


def chat(content: Any = "hi", **fields: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": content}], "max_tokens": 2, **fields}


def function(parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "f", "parameters": parameters}}


OPENAI_CASES: dict[str, tuple[str, bytes]] = {
    "chat lone surrogate": (CHAT, raw_json(chat(LONE))),
    "responses lone surrogate": ("/v1/responses", raw_json({"input": LONE})),
    "completion lone surrogate": ("/completion", raw_json({"prompt": LONE, "n_predict": 2})),
    "tokenize lone surrogate": ("/tokenize", raw_json({"content": LONE})),
    "embeddings lone surrogate": ("/v1/embeddings", raw_json({"input": LONE})),
    "completion temperature 1e400": (
        "/completion", raw_json({"prompt": "hi", "n_predict": 2, "temperature": "@x@"},
                                x="1e400")),
    "completion presence_penalty -1e400": (
        "/completion", raw_json({"prompt": "hi", "n_predict": 2, "presence_penalty": "@x@"},
                                x="-1e400")),
    "chat temperature 1e400": (CHAT, raw_json(chat(temperature="@x@"), x="1e400")),
    "completion repeat_last_n 2**32": (
        "/completion", raw_json({"prompt": "hi", "n_predict": 2, "repeat_penalty": 1.1,
                                 "repeat_last_n": HUGE})),
    "chat repetition_context_size 2**32": (
        CHAT, raw_json(chat(repetition_penalty=1.1, repetition_context_size=HUGE))),
    "chat presence_context_size 2**32": (
        CHAT, raw_json(chat(presence_penalty=0.5, presence_context_size=HUGE))),
    "chat frequency_context_size 2**32": (
        CHAT, raw_json(chat(frequency_penalty=0.5, frequency_context_size=HUGE))),
    "completions presence_context_size 2**53": (
        "/v1/completions", raw_json({"prompt": "hi", "max_tokens": 2, "presence_penalty": 0.5,
                                     "presence_context_size": 16374085548510360})),
    "chat tool parameters {properties: 5}, required": (
        CHAT, raw_json(chat(tools=[function({"properties": 5})], tool_choice="required"))),
    "chat tool parameters {properties: 5}, auto": (
        CHAT, raw_json(chat(tools=[function({"properties": 5})]))),
    "chat tool schema nested 900 deep": (
        CHAT, raw_json(chat(tools=[function(nested_schema(900))], tool_choice="required"))),
    "chat tool schema nested 60 deep": (
        CHAT, raw_json(chat(tools=[function(nested_schema(60))], tool_choice="required"))),
    "responses tool schema nested 950 deep": (
        "/v1/responses", raw_json({"input": "hi", "tool_choice": "required", "tools": [
            {"type": "function", "name": "f", "parameters": nested_schema(950)}]})),
}


@pytest.mark.parametrize("case", sorted(OPENAI_CASES))
def test_openai_family_inputs_are_400(client: TestClient, case: str) -> None:
    path, body = OPENAI_CASES[case]
    openai_400(post(client, path, body))


ANTHROPIC_CASES: dict[str, bytes] = {
    "lone surrogate": raw_json({"max_tokens": 2, "messages": [
        {"role": "user", "content": LONE}]}),
    "tool_result content 5": raw_json({"max_tokens": 2, "messages": [
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": 5}]}]}),
    "tool_result content object": raw_json({"max_tokens": 2, "messages": [
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": {"a": 1}}]}]}),
    "temperature 1e400": raw_json({"max_tokens": 2, "temperature": "@x@", "messages": [
        {"role": "user", "content": "hi"}]}, x="1e400"),
    "tool schema nested 900 deep": raw_json({"max_tokens": 2, "tool_choice": {"type": "any"},
                                             "tools": [{"name": "f", "input_schema":
                                                        nested_schema(900)}],
                                             "messages": [{"role": "user", "content": "hi"}]}),
}


@pytest.mark.parametrize("case", sorted(ANTHROPIC_CASES))
def test_messages_inputs_are_anthropic_400(client: TestClient, case: str) -> None:
    anthropic_400(post(client, "/v1/messages", ANTHROPIC_CASES[case]))


def test_1e400_is_refused_before_any_generation(client: TestClient) -> None:
    engine: Engine = client.app.state.mlxcel.engine  # type: ignore[attr-defined]
    started = engine.stats.sequences_started
    body = raw_json({"prompt": "hi", "n_predict": 2, "temperature": "@x@"}, x="1e400")
    error = openai_400(post(client, "/completion", body))
    assert "1e400" in error["message"] or "finite" in error["message"]
    assert engine.stats.sequences_started == started


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/completions", {"prompt": ["a b", "c"], "max_tokens": 3, "logprobs": 3,
                         "repetition_penalty": 5e-324, "temperature": 0}),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
                              "logprobs": True, "top_logprobs": 3,
                              "repetition_penalty": 5e-324}),
])
def test_logprobs_of_infinite_logits_are_json(client: TestClient, path: str,
                                              body: dict[str, Any]) -> None:
    """A tiny repetition_penalty divides logits into infinities; the answer stays JSON
    (the fuzz run at 200 examples found this 500), logprobs floored at OpenAI's -9999."""
    response = client.post(path, json=body)
    assert response.status_code == 200, response.text


def test_a_surrogate_pair_is_still_text(client: TestClient) -> None:
    """Only a lone surrogate is refused: an escaped pair is one astral character."""
    body = raw_json({"content": "\U0001f600"})
    assert b"\\ud83d\\ude00" in body
    response = post(client, "/tokenize", body)
    assert response.status_code == 200 and response.json()["tokens"]


def test_detokenize_out_of_range_stays_the_documented_server_error(client: TestClient) -> None:
    """The reference documents this one as ``server_error`` (llama-server answers 500 too)."""
    response = client.post("/detokenize", json={"tokens": [10**9]})
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"


def test_nul_in_a_media_path_is_a_400(tmp_path: Path) -> None:
    policy = MediaPolicy(media_roots=(tmp_path.resolve(),))
    for url in (f"file://{tmp_path}/a%00b.png", f"{tmp_path}/a\x00b.png"):
        with pytest.raises(InvalidRequestError):
            read_media(url, policy, "messages.0.content.0.image_url")


# -- logit_bias: counted before its entries are validated (the robustness family found
# 200,000 entries held the interpreter lock ~160 ms while pydantic validated them) ----------

def test_too_many_logit_bias_entries_is_a_400_naming_the_flag(client: TestClient) -> None:
    bias = {str(i): 0 for i in range(4097)}
    error = openai_400(post(client, CHAT, raw_json(chat(logit_bias=bias))))
    assert error["param"] == "logit_bias" and "--max-logit-bias" in error["message"]


@pytest.mark.parametrize("bias", [{str(i): 0 for i in range(4097)},
                                  [[i, 0] for i in range(4097)]])
def test_too_many_native_logit_bias_entries_is_a_400(client: TestClient, bias: Any) -> None:
    response = post(client, "/completion", raw_json({"prompt": "hi", "n_predict": 1,
                                                     "logit_bias": bias}))
    assert response.status_code == 400, response.text
    assert "--max-logit-bias" in response.json()["error"]["message"]


def test_logit_bias_within_the_limit_is_served(client: TestClient) -> None:
    response = post(client, CHAT, raw_json(chat(logit_bias={str(i): -1 for i in range(1000)})))
    assert response.status_code == 200, response.text


# -- n_probs: a non-streamed /completion answer keeps every token's alternatives until it is
# rendered; at the vocabulary (2,048) for the whole context that was 8 million entries, which
# held /health for minutes (the schemathesis fuzz found it) --------------------------------

def test_n_probs_for_the_whole_context_is_a_400_before_generation(client: TestClient) -> None:
    response = post(client, "/completion", raw_json({"prompt": "hi", "n_probs": 2048,
                                                     "n_predict": -1, "ignore_eos": True}))
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error" and "--max-logprob-entries" in error["message"]


def test_n_probs_within_the_limit_and_streams_are_served(client: TestClient) -> None:
    body = {"prompt": "hi", "n_probs": 2048, "n_predict": 8, "ignore_eos": True}
    answer = post(client, "/completion", raw_json(body)).json()
    assert len(answer["completion_probabilities"]) == 8
    assert all(len(p["top_logprobs"]) == 2048 for p in answer["completion_probabilities"])
    streamed = post(client, "/completion", raw_json({**body, "n_predict": 100, "stream": True}))
    assert streamed.status_code == 200 and streamed.text.count("completion_probabilities") == 100
