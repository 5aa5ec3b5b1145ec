"""The thinking budget on the real fixture: the three aliases close the reasoning block after
the budgeted tokens on chat, Responses, /v1/completions and native /completion, in the batch
and on the solo path; bad values are 400s."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.chat.thinking_budget import ALIASES, requested_budget
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.errors import InvalidRequestError

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")
THINK = [{"role": "user", "content": "What is 2 plus 2? Think first."}]
GREEDY: dict[str, Any] = {"temperature": 0, "cache_prompt": False, "max_tokens": 40}


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=4096, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=4096, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as c:
        assert engine.wait_ready(60)
        yield c


def _chat(client: TestClient, **extra: Any) -> dict[str, Any]:
    response = client.post("/v1/chat/completions", json={"messages": THINK, **GREEDY, **extra})
    assert response.status_code == 200, response.text
    message: dict[str, Any] = response.json()["choices"][0]["message"]
    return message


def test_unlimited_budget_keeps_the_scripted_reasoning(client: TestClient) -> None:
    plain = _chat(client)
    assert plain["reasoning_content"].strip() == "2 plus 2 equals 4."
    assert _chat(client, thinking_budget_tokens=-1) == plain


@pytest.mark.parametrize("alias", ALIASES)
def test_zero_budget_empties_the_reasoning(client: TestClient, alias: str) -> None:
    message = _chat(client, **{alias: 0})
    assert not (message.get("reasoning_content") or "").strip()
    assert message["content"]


def test_small_budget_cuts_the_reasoning_short(client: TestClient, tokenizer: Any) -> None:
    full = _chat(client)["reasoning_content"].strip()
    cut = _chat(client, reasoning_budget_tokens=2)["reasoning_content"].strip()
    assert full.startswith(cut) and cut != full
    assert len(tokenizer.encode(cut, add_special_tokens=False)) <= 2


def test_budget_streams_the_same(client: TestClient) -> None:
    body = {"messages": THINK, **GREEDY, "thinking_budget_tokens": 0, "stream": True}
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        text = "".join(response.iter_text())
    assert response.status_code == 200
    assert '"reasoning_content":"2' not in text
    assert "[DONE]" in text


def test_native_completion_honours_the_budget(client: TestClient) -> None:
    prompt = "<|im_start|>user\nWhat is 2 plus 2? Think first.<|im_end|>\n<|im_start|>assistant\n"
    base = {"prompt": prompt, "n_predict": 30, "temperature": 0, "cache_prompt": False}
    full = client.post("/completion", json=base).json()["content"]
    cut = client.post("/completion", json={**base, "reasoning_budget": 0}).json()["content"]
    assert "2 plus 2 equals 4" in full
    assert "2 plus 2 equals 4" not in cut
    assert cut.startswith("<think>") and "</think>" in cut


def test_responses_honours_the_budget(client: TestClient) -> None:
    body = {"input": THINK, "max_output_tokens": 40, "temperature": 0, "cache_prompt": False}
    full = client.post("/v1/responses", json=body).json()
    cut = client.post("/v1/responses", json={**body, "thinking_budget_tokens": 0}).json()
    assert "2 plus 2 equals 4" in str(full["output"])
    assert "2 plus 2 equals 4" not in str(cut["output"])


@pytest.mark.parametrize("value", [-2, 1.5, "3", True])
def test_bad_budget_is_a_400(client: TestClient, value: Any) -> None:
    response = client.post("/v1/chat/completions",
                           json={"messages": THINK, "thinking_budget_tokens": value})
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_the_first_alias_wins() -> None:
    assert requested_budget({"thinking_budget_tokens": 1, "reasoning_budget": 2}) == 1
    assert requested_budget({"reasoning_budget_tokens": 4, "reasoning_budget": 2}) == 4
    assert requested_budget({"reasoning_budget_tokens": -1}) is None
    with pytest.raises(InvalidRequestError):
        requested_budget({"reasoning_budget": -3})


def test_budget_holds_inside_the_batch(client: TestClient) -> None:
    """Requests that arrive together share the continuous batch (not the solo path)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        messages = list(pool.map(lambda _: _chat(client, thinking_budget_tokens=1), range(4)))
    for message in messages:
        reasoning = (message.get("reasoning_content") or "").strip()
        assert "equals" not in reasoning and message["content"]


def test_anthropic_budget_tokens_is_the_thinking_budget(client: TestClient) -> None:
    body = {"model": "m", "max_tokens": 40, "messages": THINK, "temperature": 0}
    full = client.post("/v1/messages", json={**body, "thinking": {"type": "enabled",
                                                                   "budget_tokens": 1024}})
    cut = client.post("/v1/messages", json={**body, "thinking": {"type": "enabled",
                                                                  "budget_tokens": 0}})
    assert full.status_code == cut.status_code == 200
    thinking = [b for b in full.json()["content"] if b["type"] == "thinking"]
    assert "2 plus 2 equals 4" in thinking[0]["thinking"]
    assert "2 plus 2 equals 4" not in str(cut.json()["content"])
    bad = client.post("/v1/messages", json={**body, "thinking": {"type": "enabled",
                                                                  "budget_tokens": -5}})
    assert bad.status_code == 400 and bad.json()["type"] == "error"


def test_anthropic_budget_tokens_takes_an_integral_float() -> None:
    """5.0 is an integer to JSON Schema (the spec's ``type: integer``); -1 and 2.5 are refused
    when the body is read (a 400 naming ``thinking.budget_tokens``)."""
    from pydantic import ValidationError

    from mlxcel.families.anthropic.messages_wire import MessagesRequest

    def budget(value: Any) -> int | None:
        return MessagesRequest.model_validate({
            "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}],
            "thinking": {"type": "enabled", "budget_tokens": value}}).thinking_budget()

    assert budget(5.0) == 5 and budget(7) == 7
    for bad in (-1, 2.5, True):
        with pytest.raises(ValidationError, match="thinking.budget_tokens"):
            budget(bad)
