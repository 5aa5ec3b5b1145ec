"""``api/guard.py`` (issue 20, findings 2 and 9): a web page cannot drive a local server, and
every route refuses an oversized body with 413 in its family's shape before reading it.
The app's engine never starts (no ``with``): every refusal happens before a route runs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.api.guard import GuardSettings, host_name, is_loopback, refusal
from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.limits import RequestLimits

SMALL = 4096


def app_client(fixture_model: str, **config: Any) -> TestClient:
    engine = Engine(EngineConfig(model=fixture_model))
    limits = RequestLimits(max_body_bytes=SMALL)
    return TestClient(create_app(ServerConfig(model=fixture_model, limits=limits, **config),
                                 engine), base_url="http://127.0.0.1:8080")


@pytest.fixture(scope="module")
def client(fixture_model: str) -> Iterator[TestClient]:
    yield app_client(fixture_model)


POSTS = ["/v1/chat/completions", "/v1/completions", "/completion", "/v1/responses",
         "/tokenize", "/apply-template", "/v1/embeddings", "/infill", "/v1/rerank",
         "/v1/audio/speech", "/v1/images/generations"]


@pytest.mark.parametrize("path", POSTS)
def test_oversized_body_is_413_in_openai_shape(client: TestClient, path: str) -> None:
    response = client.post(path, content=b"x" * (SMALL + 1),
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["type"] == "request_too_large"


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/messages/count_tokens"])
def test_oversized_body_is_413_in_anthropic_shape(client: TestClient, path: str) -> None:
    response = client.post(path, content=b"{" + b" " * SMALL + b"}")
    assert response.status_code == 413
    assert response.json() == {"type": "error", "error": {
        "type": "request_too_large", "message": response.json()["error"]["message"]}}


def test_a_chunked_body_is_counted_as_it_arrives(client: TestClient) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(SMALL // 256 + 2):
            yield b" " * 256

    response = client.post("/v1/chat/completions", content=chunks())
    assert response.status_code == 413


def test_a_body_within_the_limit_reaches_the_route(client: TestClient) -> None:
    response = client.post("/tokenize", json={"content": "x"})
    assert response.status_code == 503  # the model is not loaded here: the route ran


@pytest.mark.parametrize("origin", ["http://evil.example", "null", "http://127.0.0.1:9999",
                                    "https://127.0.0.1:8080"])
def test_a_foreign_browser_origin_is_403(client: TestClient, origin: str) -> None:
    response = client.post("/v1/chat/completions", content=b'{"messages": []}',
                           headers={"Origin": origin, "Content-Type": "text/plain"})
    assert response.status_code == 403
    error = response.json()["error"]
    assert error["type"] == "permission_error" and error["code"] == "origin_not_allowed"


def test_the_anthropic_route_refuses_in_its_shape(client: TestClient) -> None:
    response = client.post("/v1/messages", json={}, headers={"Origin": "http://evil.example"})
    assert response.status_code == 403
    assert response.json()["error"]["type"] == "permission_error"


def test_no_origin_and_any_content_type_still_work(client: TestClient) -> None:
    """curl, the SDKs and llama.cpp clients send no Origin; text/plain bodies stay accepted."""
    response = client.post("/tokenize", content=b'{"content": "x"}',
                           headers={"Content-Type": "text/plain"})
    assert response.status_code == 503  # past the guard (model not loaded)


def test_the_servers_own_origin_is_allowed(client: TestClient) -> None:
    response = client.post("/tokenize", json={"content": "x"},
                           headers={"Origin": "http://127.0.0.1:8080"})
    assert response.status_code == 503


def test_allowed_origins_flag(fixture_model: str) -> None:
    with_list = app_client(fixture_model, allowed_origins=("http://localhost:3000",))
    ok = with_list.post("/tokenize", json={}, headers={"Origin": "http://localhost:3000"})
    assert ok.status_code != 403
    assert with_list.post("/tokenize", json={},
                          headers={"Origin": "http://evil.example"}).status_code == 403
    anyone = app_client(fixture_model, allowed_origins=("*",))
    assert anyone.post("/tokenize", json={},
                       headers={"Origin": "http://evil.example"}).status_code != 403


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8080", "192.168.1.20:8080",
                                  "127.0.0.1.evil.example"])
def test_a_rebinding_host_is_403_on_a_loopback_server(client: TestClient, host: str) -> None:
    response = client.get("/v1/models", headers={"Host": host})
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "host_not_allowed"


@pytest.mark.parametrize("host", ["localhost:8080", "127.0.0.1", "127.0.0.2:1", "[::1]:8080",
                                  "app.localhost"])
def test_loopback_hosts_are_served(client: TestClient, host: str) -> None:
    assert client.get("/health", headers={"Host": host}).status_code == 503  # loading


def test_allowed_hosts_and_non_loopback_binding(fixture_model: str) -> None:
    listed = app_client(fixture_model, allowed_hosts=("box.lan",))
    assert listed.get("/health", headers={"Host": "box.lan:8080"}).status_code == 503
    public = app_client(fixture_model, host="0.0.0.0")
    assert public.get("/health", headers={"Host": "evil.example"}).status_code == 503


def test_guard_helpers() -> None:
    assert host_name("[::1]:8080") == "::1" and host_name("Example.COM:80") == "example.com"
    assert is_loopback("127.9.9.9") and is_loopback("::1") and is_loopback("x.localhost")
    assert not is_loopback("evil.example") and not is_loopback("10.0.0.1")
    settings = GuardSettings(max_body_bytes=1, read_timeout_s=1.0)
    assert refusal(settings, {b"host": b"localhost"}, "http") is None
