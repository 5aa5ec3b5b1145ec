"""``api/auth.py``: the key a client presents, and the middleware in front of a real app (whose
engine is never started, so no model loads: the lifespan does not run without ``with``)."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from mlxcel.api.auth import presented_key
from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.families.llama.errors import LLAMA_PATHS

KEY = "k"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.mark.parametrize(
    ("header", "key"),
    [
        ("Bearer sk-1", "sk-1"),
        ("bearer sk-1", "sk-1"),
        ("BEARER sk-1", "sk-1"),
        ("  Bearer   sk-1  ", "sk-1"),
        ("sk-1", "sk-1"),
        (" sk-1 ", "sk-1"),
        ("", None),
        (None, None),
        ("   ", None),
        ("Bearer", None),
        ("Bearer ", None),
        ("bearer    ", None),
    ],
)
def test_presented_key(header: str | None, key: str | None) -> None:
    assert presented_key(header) == key


@given(st.text(alphabet=st.characters(codec="latin-1", exclude_categories=["Z", "Cc"]),
               min_size=1))
def test_any_key_round_trips(key: str) -> None:
    assert presented_key(f"Bearer {key}") == key
    if key.lower() != "bearer":
        assert presented_key(key) == key


@pytest.fixture(scope="module")
def app(fixture_model: str) -> FastAPI:
    model = fixture_model
    engine = Engine(EngineConfig(model=model))
    return create_app(ServerConfig(model=model, api_key=KEY), engine)


@pytest.fixture(scope="module")
def client(app: FastAPI) -> TestClient:
    return TestClient(app, raise_server_exceptions=False)


def error_of(response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert list(body) == ["error"]
    assert set(body["error"]) == {"message", "type", "param", "code"}
    error: dict[str, Any] = body["error"]
    return error


def test_engine_is_not_started(app: FastAPI) -> None:
    engine = app.state.mlxcel.engine
    assert engine.state == "loading" and not engine.started


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/models"), ("POST", "/v1/completions"), ("POST", "/v1/chat/completions"),
     ("POST", "/tokenize"), ("GET", "/no/such/route")],
)
def test_missing_key_is_401(client: TestClient, method: str, path: str) -> None:
    for headers in ({}, {"Authorization": ""}, {"Authorization": "Bearer "}):
        response = client.request(method, path, headers=headers)
        if path in LLAMA_PATHS:  # llama-server's shape on its native routes
            assert response.status_code == 401
            error = response.json()["error"]
            assert error == {"code": 401, "type": "authentication_error",
                             "message": error["message"]}
        else:
            error = error_of(response, 401)
            assert error["type"] == error["code"] == "missing_api_key"
        assert "Authorization: Bearer" in error["message"]


def test_missing_key_names_the_anthropic_header_too(client: TestClient) -> None:
    """Anthropic's SDKs send ``x-api-key``, which the check accepts: the refusal names it."""
    response = client.post("/v1/messages", json={})
    assert response.status_code == 401
    assert "x-api-key: <key>" in response.json()["error"]["message"]


@pytest.mark.parametrize("header", ["Bearer wrong", "wrong", "Bearer k2", "Bearer K", "Basic k"])
def test_wrong_key_is_401(client: TestClient, header: str) -> None:
    error = error_of(client.get("/v1/models", headers={"Authorization": header}), 401)
    assert error == {
        "message": "Invalid API key.",
        "type": "invalid_api_key",
        "param": None,
        "code": "invalid_api_key",
    }


@pytest.mark.parametrize("header", ["Bearer k", "bearer k", "k"])
def test_right_key_passes(client: TestClient, header: str) -> None:
    response = client.get("/v1/models", headers={"Authorization": header})
    assert response.status_code == 200
    assert response.json()["object"] == "list"


@pytest.mark.parametrize("path", ["/health", "/"])
def test_health_is_exempt_and_reports_loading(client: TestClient, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        response = client.get(path, headers=headers)
        assert response.status_code == 503
        assert response.json() == {"status": "loading model"}


def test_unknown_route_is_404_in_openai_shape(client: TestClient) -> None:
    error = error_of(client.get("/v1/nope", headers=AUTH), 404)
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "not_found"
    assert "GET /v1/nope" in error["message"]


def test_wrong_method_is_405_in_openai_shape(client: TestClient) -> None:
    error = error_of(client.get("/v1/completions", headers=AUTH), 405)
    assert error["type"] == "invalid_request_error"
    assert error["code"] == "method_not_allowed"
    assert "GET /v1/completions" in error["message"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/completions", {"prompt": "hi", "max_tokens": 2}),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}),
    ],
)
def test_generation_while_loading_is_503_server_busy(
    client: TestClient, path: str, body: dict[str, Any]
) -> None:
    error = error_of(client.post(path, json=body, headers=AUTH), 503)
    assert error["type"] == "server_busy"
    assert "loading" in error["message"]


def test_bad_body_is_still_a_400_while_loading(client: TestClient) -> None:
    response = client.post("/v1/completions", content=b"{", headers=AUTH)
    assert error_of(response, 400)["type"] == "invalid_request_error"


def test_no_key_configured_means_no_check(fixture_model: str) -> None:
    model = fixture_model
    app = create_app(ServerConfig(model=model), Engine(EngineConfig(model=model)))
    assert TestClient(app).get("/v1/models").status_code == 200
