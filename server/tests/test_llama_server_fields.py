"""llama-server's own request fields on the OpenAI-shaped routes and its native ones:
``grammar`` (GBNF or Lark) and ``json_schema`` on /completion, /v1/completions and
/v1/chat/completions, ``continue_final_message`` on chat, ``timings_per_token`` and
``return_progress`` on a /completion stream, ``timings_per_token`` on the OpenAI routes, and
errors in llama-server's shape on its native routes (a prompt over the context included)."""

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
YES_NO = 'root ::= "yes" | "no"'
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    config = ServerConfig(model=MODEL, ctx_size=512, parallel=2)
    engine = Engine(EngineConfig(model=MODEL, ctx_size=512, parallel=2, cache_prompt=False))
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


def _text(path: str, body: dict[str, Any]) -> str:
    if path == "/completion":
        return str(body["content"])
    choice = body["choices"][0]
    return str(choice["message"]["content"] if "message" in choice else choice["text"])


ROUTES = {"/completion": {"prompt": "Answer:", "n_predict": 24},
          "/v1/completions": {"prompt": "Answer:", "max_tokens": 24},
          "/v1/chat/completions": {"messages": HELLO, "max_tokens": 24}}


@pytest.mark.parametrize("path", sorted(ROUTES))
@pytest.mark.parametrize("grammar", [YES_NO, 'start: "yes" | "no"'])
def test_grammar_gbnf_or_lark(client: TestClient, path: str, grammar: str) -> None:
    body = client.post(path, json={**ROUTES[path], "grammar": grammar, "temperature": 0})
    assert body.status_code == 200, body.text
    assert _text(path, body.json()) in ("yes", "no")


@pytest.mark.parametrize("path", sorted(ROUTES))
def test_json_schema_wins_and_ends(client: TestClient, path: str) -> None:
    body = client.post(path, json={**ROUTES[path], "json_schema": SCHEMA, "grammar": YES_NO,
                                   "temperature": 0}).json()
    assert set(json.loads(_text(path, body))) == {"n"}


@pytest.mark.parametrize("path", sorted(ROUTES))
@pytest.mark.parametrize("grammar", ["root ::= (", "root ::= undefined_rule", 'x ::= "a"', 7])
def test_invalid_grammar_is_a_400(client: TestClient, path: str, grammar: Any) -> None:
    response = client.post(path, json={**ROUTES[path], "grammar": grammar})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert "grammar" in error["message"]
    if path == "/completion":  # llama-server's shape on its native route
        assert error["code"] == 400 and error["type"] == "invalid_request_error"
    else:
        assert error["param"] == "grammar"


def test_grammar_with_a_forced_tool_call_or_response_format_is_a_400(client: TestClient) -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
    forced = client.post("/v1/chat/completions", json={
        "messages": HELLO, "tools": [tool], "tool_choice": "required", "grammar": YES_NO})
    assert forced.status_code == 400 and forced.json()["error"]["param"] == "grammar"
    fmt = {"type": "json_schema", "json_schema": {"name": "x", "schema": SCHEMA}}
    both = client.post("/v1/completions", json={"prompt": "x", "response_format": fmt,
                                                "json_schema": SCHEMA})
    assert both.status_code == 400 and both.json()["error"]["param"] == "json_schema"


def test_continue_final_message(client: TestClient) -> None:
    full = client.post("/v1/chat/completions", json={
        "messages": HELLO, "max_tokens": 8, "temperature": 0}).json()
    text = full["choices"][0]["message"]["content"]
    head = text[:10]
    body = {"messages": [*HELLO, {"role": "assistant", "content": head}], "max_tokens": 6,
            "temperature": 0, "continue_final_message": True, "add_generation_prompt": False}
    rest = client.post("/v1/chat/completions", json=body).json()["choices"][0]
    assert text.startswith(head + rest["message"]["content"][:4]), (text, rest)
    without = client.post("/v1/chat/completions", json={**body, "continue_final_message": False,
                                                         "add_generation_prompt": True})
    assert without.status_code == 200  # a new assistant turn instead


@pytest.mark.parametrize(("messages", "fields"), [
    (HELLO, {}),  # the last message is not an assistant one
    ([*HELLO, {"role": "assistant", "content": ""}], {}),  # nothing to continue
    ([*HELLO, {"role": "assistant", "content": None, "tool_calls": [{
        "id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}], {}),
    ([*HELLO, {"role": "assistant", "content": "Hi"}], {"add_generation_prompt": True}),
    ([*HELLO, {"role": "assistant", "content": "Hi"}], {"continue_final_message": "other"}),
])
def test_continue_final_message_refusals(client: TestClient, messages: list[Any],
                                         fields: dict[str, Any]) -> None:
    body = {"messages": messages, "max_tokens": 2, "continue_final_message": True, **fields}
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["param"] == "continue_final_message"


def _events(client: TestClient, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client.stream("POST", "/completion", json={**body, "stream": True}) as response:
        return [json.loads(line[6:]) for line in response.iter_lines()
                if line.startswith("data: ")]


def test_timings_per_token_and_return_progress(client: TestClient) -> None:
    events = _events(client, {"prompt": "Answer:", "n_predict": 3, "temperature": 0,
                              "timings_per_token": True, "return_progress": True})
    progress = [e["prompt_progress"] for e in events if "prompt_progress" in e]
    processed = [p["processed"] for p in progress]  # more in test_prompt_progress.py
    assert processed[0] == 0 and processed[-1] == 4 and processed == sorted(set(processed))
    assert all(p["total"] == 4 for p in progress)
    tokens = [e for e in events if e["tokens"]]
    assert len(tokens) == 3 and all(e["timings"]["predicted_n"] == e["tokens_predicted"]
                                    for e in tokens)
    plain = _events(client, {"prompt": "Answer:", "n_predict": 3, "temperature": 0})
    assert not any("timings" in e or "prompt_progress" in e for e in plain[:-1])


@pytest.mark.parametrize("path", ["/completion", "/tokenize", "/apply-template", "/infill"])
def test_native_routes_answer_errors_in_llama_servers_shape(client: TestClient,
                                                            path: str) -> None:
    response = client.post(path, content=b"{not json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert set(error) == {"code", "message", "type"} and error["code"] == 400


def test_prompt_over_the_context_is_exceed_context_size_error(client: TestClient) -> None:
    n_ctx = client.get("/props").json()["default_generation_settings"]["n_ctx"]
    prompt = [100] * (n_ctx + 5)
    native = client.post("/completion", json={"prompt": prompt, "n_predict": 2})
    assert native.status_code == 400
    assert native.json()["error"] == {
        "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": n_ctx + 5,
        "n_ctx": n_ctx, "message": f"request ({n_ctx + 5} tokens) exceeds the available "
                                   f"context size ({n_ctx} tokens), try increasing it"}
    openai = client.post("/v1/completions", json={"prompt": prompt, "max_tokens": 2})
    assert openai.json()["error"]["code"] == "context_length_exceeded"  # OpenAI's shape there


def test_prompt_objects(client: TestClient) -> None:
    """README "POST /completion": {"prompt_string": ...} alone or among other prompt forms."""
    base = {"n_predict": 4, "temperature": 0}
    text = client.post("/completion", json={**base, "prompt": "Answer:"}).json()["content"]
    one = client.post("/completion", json={**base, "prompt": {"prompt_string": "Answer:"}})
    assert one.json()["content"] == text
    ids = client.post("/tokenize", json={"content": "Answer:"}).json()["tokens"]
    many = client.post("/completion", json={**base, "prompt": [
        {"prompt_string": "Answer:"}, "Answer:", ids]}).json()
    assert [m["content"] for m in many] == [text] * 3
    for bad in ({"prompt_string": "x", "multimodal_data": ["AAAA"]}, {"text": "x"}):
        response = client.post("/completion", json={**base, "prompt": bad})
        assert response.status_code == 400 and response.json()["error"]["code"] == 400


def _openai_stream(client: TestClient, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    with client.stream("POST", path, json={**body, "stream": True}) as response:
        lines = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


OPENAI_ROUTES = {"/v1/completions": {"prompt": "Answer:", "max_tokens": 4},
                 "/v1/chat/completions": {"messages": HELLO, "max_tokens": 4}}


@pytest.mark.parametrize("path", sorted(OPENAI_ROUTES))
def test_timings_per_token_on_the_openai_routes(client: TestClient, path: str) -> None:
    """llama-server's README: its /completion options work on the OpenAI routes too; with
    timings_per_token every chunk with text carries the timings so far and the finish chunk
    and the JSON body the final ones. Without it, none (OpenAI's shape)."""
    body = {**OPENAI_ROUTES[path], "temperature": 0, "timings_per_token": True}
    chunks = _openai_stream(client, path, body)
    texts = [c for c in chunks if c["choices"] and _delta_text(c["choices"][0])]
    assert texts and all("timings" in c for c in texts)
    assert [c["timings"]["predicted_n"] for c in texts] == sorted(
        c["timings"]["predicted_n"] for c in texts)
    [last] = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"]]
    assert last["timings"]["predicted_n"] == 4 and last["timings"]["prompt_n"] > 0
    final = client.post(path, json=body).json()
    assert final["timings"]["predicted_n"] == final["usage"]["completion_tokens"]
    assert spec.validate_json("POST", path, 200, final, view=spec.REFERENCE) == []
    assert all(spec.validate_sse_event("POST", path, json.dumps(c)) == [] for c in chunks)
    plain = {k: v for k, v in body.items() if k != "timings_per_token"}
    assert not any("timings" in c for c in _openai_stream(client, path, plain))
    assert "timings" not in client.post(path, json=plain).json()


def _delta_text(choice: dict[str, Any]) -> str:
    return str(choice.get("text") or (choice.get("delta") or {}).get("content") or "")
