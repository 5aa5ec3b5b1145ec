"""The inputs issue 42 (item 7 and the smaller holes of item 8) found answered with a 500 or let
through: invalid UTF-8 in a JSON body, a malformed adapter directory, a 500 that closed the
connection without saying so, two ``Origin`` headers, WebSocket handshakes past the Origin/Host
guard and the key check, and loopback written in IPv6 in a media URL's address."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from mlxcel.api.handlers import install_error_handlers
from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.errors import InvalidRequestError
from mlxcel.media.addresses import is_public_address
from mlxcel.protocol.mlx_lm_fields import resolve_adapter

ADAPTER = Path(__file__).resolve().parents[2] / "fixtures" / "adapters" / "qwen3-tiny-lora"
# U+D800 encoded as if it were a character: not UTF-8 (RFC 3629 section 3)
BAD_UTF8 = b'"a\xed\xa0\x80b"'


def _adapter(root: Path, name: str, config: Any, weights: bytes | None = None) -> None:
    shutil.copytree(ADAPTER, root / name)
    (root / name / "adapter_config.json").write_text(json.dumps(config))
    if weights is not None:
        (root / name / "adapters.safetensors").write_bytes(weights)


@pytest.fixture(scope="module")
def adapter_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("adapters")
    good = json.loads((ADAPTER / "adapter_config.json").read_text())
    _adapter(root, "empty-config", {})
    _adapter(root, "list-config", [1, 2])
    _adapter(root, "no-lora-parameters", {"num_layers": 2})
    _adapter(root, "alpha-not-scale", {**good, "lora_parameters": {"rank": 4, "alpha": 8,
                                                                     "dropout": 0.0}})
    _adapter(root, "odd-type", {**good, "fine_tune_type": "qlora"})
    _adapter(root, "truncated-weights", good, weights=b"\xff" * 8 + b"{")
    return root


@pytest.fixture(scope="module")
def client(fixture_model: str, adapter_root: Path) -> Iterator[TestClient]:
    engine = Engine(EngineConfig(model=fixture_model, ctx_size=2048, parallel=2))
    config = ServerConfig(model=fixture_model, adapter_dir=str(adapter_root))
    with TestClient(create_app(config, engine), raise_server_exceptions=False) as test_client:
        assert engine.wait_ready(60)
        yield test_client


def _messages(content: bytes) -> bytes:
    return b'{"messages": [{"role": "user", "content": ' + content + b'}], "max_tokens": 2'


INVALID_UTF8 = {
    "/v1/chat/completions": _messages(BAD_UTF8) + b"}",
    "/v1/completions": b'{"prompt": ' + BAD_UTF8 + b', "max_tokens": 2}',
    "/v1/responses": b'{"input": ' + BAD_UTF8 + b', "max_output_tokens": 2}',
    "/v1/messages": _messages(BAD_UTF8) + b', "model": "m"}',
    "/completion": b'{"prompt": ' + BAD_UTF8 + b', "n_predict": 2}',
}


@pytest.mark.parametrize("path", sorted(INVALID_UTF8))
def test_invalid_utf8_is_a_400_naming_the_encoding(client: TestClient, path: str) -> None:
    response = client.post(path, content=INVALID_UTF8[path],
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    body = response.json()
    if path == "/v1/messages":  # Anthropic's error shape
        assert body["type"] == "error"
    error = body["error"]
    assert error["type"] == "invalid_request_error"
    assert "not valid UTF-8" in error["message"] and "0xed" in error["message"]


def test_valid_utf8_beyond_ascii_still_parses(client: TestClient) -> None:
    body = _messages('"caf\u00e9 \U0001f600"'.encode()) + b"}"
    response = client.post("/v1/chat/completions", content=body,
                           headers={"Content-Type": "application/json"})
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("name", "problem"), [
    ("empty-config", "integer num_layers"),
    ("list-config", "JSON object"),
    ("no-lora-parameters", "lora_parameters object"),
    ("alpha-not-scale", "number scale"),
    ("odd-type", "fine_tune_type"),
    ("truncated-weights", "not a safetensors file"),
])
def test_a_malformed_adapter_is_named(adapter_root: Path, name: str, problem: str) -> None:
    with pytest.raises(InvalidRequestError, match=problem) as caught:
        resolve_adapter(name, str(adapter_root))
    assert caught.value.param == "adapters"


def test_the_committed_adapter_still_resolves(adapter_root: Path) -> None:
    shutil.copytree(ADAPTER, adapter_root / "good", dirs_exist_ok=True)
    assert resolve_adapter("good", str(adapter_root)).name == "good"


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/completions"])
def test_an_empty_adapter_config_is_a_400_not_a_500(client: TestClient, path: str) -> None:
    extra: dict[str, Any] = ({"prompt": "hi"} if path != "/v1/chat/completions"
                             else {"messages": [{"role": "user", "content": "hi"}]})
    response = client.post(path, json={**extra, "adapters": "empty-config", "max_tokens": 2})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == "adapters" and "num_layers" in error["message"]


def test_a_500_says_connection_close() -> None:
    app = FastAPI()
    install_error_handlers(app)

    @app.get("/boom")
    async def boom() -> None:
        raise RuntimeError("a bug")

    response = TestClient(app, raise_server_exceptions=False).get("/boom")
    assert response.status_code == 500
    assert response.headers["connection"] == "close"


def test_two_origin_headers_are_refused(client: TestClient) -> None:
    own = "http://testserver"
    alone = client.post("/tokenize", json={"content": "x"}, headers={"Origin": own})
    assert alone.status_code == 200, alone.text
    both = client.post("/tokenize", json={"content": "x"},
                       headers=[("Origin", "http://evil.example"), ("Origin", own)])
    assert both.status_code == 403
    assert "one Origin header" in both.json()["error"]["message"]  # llama-server shape


def _handshake_close(client: TestClient, headers: dict[str, str]) -> WebSocketDisconnect:
    with pytest.raises(WebSocketDisconnect) as closed, \
            client.websocket_connect("/v1/realtime", headers=headers):
        pass
    return closed.value


def test_websocket_handshakes_pass_the_origin_guard(client: TestClient) -> None:
    refused = _handshake_close(client, {"Origin": "http://evil.example"})
    assert refused.code == 1008 and "evil.example" in (refused.reason or "")
    # the server's own origin (ws -> http) passes the guard and meets the router (no route)
    passed = _handshake_close(client, {"Origin": "http://testserver"})
    assert passed.code != 1008


def test_websocket_handshakes_pass_the_key_check(fixture_model: str) -> None:
    engine = Engine(EngineConfig(model=fixture_model))
    app = create_app(ServerConfig(model=fixture_model, api_key="sk-test"), engine)
    client = TestClient(app)  # no lifespan: the refusal happens before any route
    refused = _handshake_close(client, {})
    assert refused.code == 1008 and "API key" in (refused.reason or "")
    passed = _handshake_close(client, {"Authorization": "Bearer sk-test"})
    assert passed.code != 1008


@pytest.mark.parametrize("address", [
    "::7f00:1",             # IPv4-compatible 127.0.0.1
    "::ffff:0:7f00:1",      # IPv4-translated
    "64:ff9b::7f00:1",      # NAT64 well-known prefix
    "::ffff:7f00:1",        # IPv4-mapped
    "2002:7f00:1::",        # 6to4
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "64:ff9b::a00:1",       # NAT64 of 10.0.0.1
    "64:ff9b:1::808:808",   # NAT64 local-use prefix
    "::1", "::", "127.0.0.1", "10.1.2.3", "fe80::1%eth0",
])
def test_loopback_and_private_in_every_ipv6_spelling_are_refused(address: str) -> None:
    assert not is_public_address(address)


@pytest.mark.parametrize("address", ["8.8.8.8", "64:ff9b::808:808", "::ffff:8.8.8.8",
                                     "2606:4700:4700::1111"])
def test_public_addresses_stay_allowed(address: str) -> None:
    assert is_public_address(address)
