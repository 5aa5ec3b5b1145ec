"""Issue 20's findings 1, 3, 4, 6 and 8, each reproduced through the app:

1. a DRY breaker of a million characters hung the server (breaker tables grew with the
   string's length squared, on the event loop);
3. /apply-template rendered a template supplied in the request;
4. a /completion refused with 503 part-way had already queued some of its prompts;
6. the Responses store was bounded by entries only, not bytes;
8. --metrics-port served metrics on any path, without the API key.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.families.llama import native_completion as native
from mlxcel.families.responses.response_store import StoredResponse
from mlxcel.families.responses.store_config import StoreConfig
from mlxcel.families.responses.store_service import make_stores
from mlxcel.limits import RequestLimits


@pytest.fixture(scope="module")
def client(fixture_model: str) -> Iterator[TestClient]:
    engine = Engine(EngineConfig(model=fixture_model, ctx_size=4096, parallel=1, max_queue=2))
    config = ServerConfig(model=fixture_model, parallel=1, sections={
        "responses": StoreConfig(responses_store_max_bytes=40_000)})
    with TestClient(create_app(config, engine)) as test_client:
        assert engine.wait_ready(60)
        yield test_client


def engine_of(client: TestClient) -> Engine:
    engine: Engine = client.app.state.mlxcel.engine  # type: ignore[attr-defined]
    return engine


# -- 1: DRY breakers ------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_a_million_character_breaker_is_cut_and_answered(client: TestClient) -> None:
    body = {"prompt": "hi", "n_predict": 2, "dry_multiplier": 1.0,
            "dry_sequence_breakers": ["q" * 1_000_000]}
    start = time.perf_counter()
    response = client.post("/completion", json=body)
    assert response.status_code == 200, response.text
    assert time.perf_counter() - start < 30


def test_too_many_breakers_is_a_400(client: TestClient) -> None:
    body = {"prompt": "hi", "n_predict": 2, "dry_multiplier": 1.0,
            "dry_sequence_breakers": [f"b{i}" for i in range(65)]}
    response = client.post("/completion", json=body)
    assert response.status_code == 400  # in llama-server's error shape (no param)
    assert "dry_sequence_breakers" in response.json()["error"]["message"]


def test_breakers_are_cut_to_the_configured_length() -> None:
    assert native.bounded_breakers(None) == native.DEFAULT_STRING_BREAKERS
    assert native.bounded_breakers(["x" * 100, "ab"]) == ("x" * 40, "ab")


def test_the_breaker_cache_is_bounded(client: TestClient) -> None:
    for i in range(native.BREAKER_CACHE_ENTRIES + 8):
        body = {"prompt": "hi", "n_predict": 1, "dry_multiplier": 1.0,
                "dry_sequence_breakers": [f"breaker {i}"]}
        assert client.post("/completion", json=body).status_code == 200
    assert len(native._BREAKER_CACHE) <= native.BREAKER_CACHE_ENTRIES


@pytest.mark.parametrize("stop", [["s"] * 17, ["x" * 1025]])
def test_stop_strings_are_bounded_on_every_family(client: TestClient, stop: list[str]) -> None:
    chat = client.post("/v1/chat/completions", json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2, "stop": stop})
    assert chat.status_code == 400 and chat.json()["error"]["param"] == "stop"
    llama = client.post("/completion", json={"prompt": "hi", "n_predict": 2, "stop": stop})
    assert llama.status_code == 400
    messages = client.post("/v1/messages", json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
        "stop_sequences": stop})
    assert messages.status_code == 400 and messages.json()["type"] == "error"


# -- 3: templates supplied by the request ---------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("template", ['{{ "a" * 1000000000 }}',
                                      "{% for i in range(1000000) %}x{% endfor %}"])
def test_apply_template_ignores_a_request_template(client: TestClient, template: str) -> None:
    messages = [{"role": "user", "content": "hello there"}]
    plain = client.post("/apply-template", json={"messages": messages})
    hostile = client.post("/apply-template", json={
        "messages": messages, "chat_template_kwargs": {"chat_template": template}})
    assert hostile.status_code == 200, hostile.text
    assert hostile.json() == plain.json()
    assert "hello there" in plain.json()["prompt"]


# -- 4: all-or-nothing admission ------------------------------------------------------------

@pytest.mark.parametrize(("path", "field"), [("/completion", "n_predict"),
                                             ("/v1/completions", "max_tokens")])
def test_a_refused_batch_leaves_nothing_queued(client: TestClient, path: str,
                                               field: str) -> None:
    """One slot, a queue of two: three prompts cannot all be admitted, so none is."""
    engine = engine_of(client)
    started = engine.stats.sequences_started
    body = {"prompt": ["one", "two", "three"], field: 64, "ignore_eos": True}
    response = client.post(path, json=body)
    assert response.status_code == 503, response.text
    assert engine.queue_depth == 0
    time.sleep(0.3)
    assert engine.stats.sequences_started == started and engine.active_sequences == 0


def test_a_batch_that_fits_is_served_whole(client: TestClient) -> None:
    response = client.post("/completion", json={"prompt": ["one", "two"], "n_predict": 2})
    assert response.status_code == 200 and len(response.json()) == 2


# -- 6: stored responses bounded by bytes ---------------------------------------------------

def test_the_store_evicts_by_bytes() -> None:
    stores = make_stores(100, 60, 100, 60, max_bytes=250_000)
    store = stores.responses
    for key in ("a", "b", "c"):
        store.put(key, StoredResponse({"id": key}, [{"role": "user", "content": "x" * 100_000}]))
    assert store.get("a") is None and store.get("b") and store.get("c")
    assert stores.db.bytes_held <= 250_000
    store.put("huge", StoredResponse({"id": "huge", "text": "y" * 300_000}))
    assert store.get("huge") is None  # larger than the whole store: kept nowhere


def test_responses_store_holds_at_most_its_bytes(client: TestClient) -> None:
    """A store of 40 kB and three responses whose histories hold 15 kB each."""
    ids = []
    for i in range(3):
        text = f"turn {i} " + "word " * 3000
        response = client.post("/v1/responses", json={"input": text, "max_output_tokens": 2})
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
    stores = client.app.state.mlxcel.services.parts["responses"]  # type: ignore[attr-defined]
    assert 0 < stores.db.bytes_held <= 40_000
    assert client.get(f"/v1/responses/{ids[0]}").status_code == 404
    assert client.get(f"/v1/responses/{ids[-1]}").status_code == 200


# -- 8: the metrics port ----------------------------------------------------------------------

def test_metrics_port_honours_the_api_key_and_serves_metrics_only(fixture_model: str) -> None:
    """The metrics port is a socket of the same app (cli.py): the main port's rules, header
    names in any case included."""
    port = 9464
    app = create_app(ServerConfig(model=fixture_model, api_key="k", metrics_port=port),
                     Engine(EngineConfig(model=fixture_model)))
    client = TestClient(app, base_url=f"http://127.0.0.1:{port}")
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer no"}).status_code == 401
    for name, value in (("Authorization", "Bearer k"), ("AUTHORIZATION", "Bearer k"),
                        ("X-API-KEY", "k")):
        ok = client.get("/metrics", headers={name: value})
        assert ok.status_code == 200 and "mlxcel_requests_total" in ok.text, name
    assert client.get("/anything", headers={"x-api-key": "k"}).status_code == 404
    assert client.get("/v1/models", headers={"x-api-key": "k"}).status_code == 404
    evil = client.get("/metrics", headers={"Authorization": "Bearer k",
                                          "Origin": "http://evil.example"})
    assert evil.status_code == 403


def test_limits_are_installed_by_the_app(fixture_model: str) -> None:
    from mlxcel import limits

    create_app(ServerConfig(model=fixture_model, limits=RequestLimits(max_stop_strings=2)),
               Engine(EngineConfig(model=fixture_model)))
    assert limits.active().max_stop_strings == 2
    create_app(ServerConfig(model=fixture_model), Engine(EngineConfig(model=fixture_model)))
    assert limits.active() == RequestLimits()

