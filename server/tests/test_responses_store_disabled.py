"""With --responses-store-max-entries 0 (and the conversation store off) nothing is stored and
GET/DELETE/cancel/previous_response_id/conversation answer 400; generation still works."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.bundled import bundled_model_path
from mlxcel.cli import build_parser, config_from_args
from mlxcel.config import ServerConfig
from mlxcel.families.responses.store_config import StoreConfig


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    store = StoreConfig(responses_store_max_entries=0, conversation_store_max_entries=0)
    config = ServerConfig(model=str(bundled_model_path()), sections={"responses": store})
    app = create_app(config)
    with TestClient(app) as test_client:
        assert app.state.mlxcel.engine.wait_ready(60)
        yield test_client


def test_generation_works_but_nothing_is_stored(client: TestClient) -> None:
    created = client.post("/v1/responses", json={"input": "Say hello.", "temperature": 0,
                                                 "max_output_tokens": 8})
    assert created.status_code == 200
    rid = created.json()["id"]
    for method, path in (("GET", f"/v1/responses/{rid}"), ("DELETE", f"/v1/responses/{rid}"),
                         ("POST", f"/v1/responses/{rid}/cancel"), ("GET", f"/responses/{rid}")):
        answer = client.request(method, path)
        assert answer.status_code == 400, (method, path)
        assert answer.json()["error"]["type"] == "invalid_request_error"
    chained = client.post("/v1/responses", json={"input": "hi", "previous_response_id": rid})
    assert chained.status_code == 400
    assert chained.json()["error"]["param"] == "previous_response_id"
    conv = client.post("/v1/responses", json={"input": "hi", "conversation": "c1"})
    assert conv.status_code == 400


def test_store_flags_and_env_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMA_ARG_RESPONSES_STORE_TTL_SECS", "5")
    monkeypatch.setenv("LLAMA_ARG_CONVERSATION_STORE_MAX_ENTRIES", "0")
    config = config_from_args(build_parser().parse_args(["--responses-store-max-entries", "7"]))
    store = StoreConfig.of(config)
    assert store.responses_store_max_entries == 7
    assert store.responses_store_ttl_secs == 5
    assert store.conversation_store_max_entries == 0
    assert store.conversation_store_ttl_secs == 3600
