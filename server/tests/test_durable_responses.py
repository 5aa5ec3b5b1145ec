"""The Responses store end to end, on a real ``mlxcel-server`` process with the fixture model:
stored responses, ``previous_response_id`` and conversations survive SIGKILL and a restart, and
a stored stream whose client goes away reads ``cancelled`` with what it generated within 1 s."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mlxcel_conformance.target import ReferenceServer, Target


def _start(model: str, store: Path) -> ReferenceServer:
    server = ReferenceServer(model=model, api_key=None, encoders=False,
                             extra_args=("--store-path", str(store)))
    server.start()
    return server


@pytest.fixture()
def store_file(tmp_path: Path) -> Path:
    return tmp_path / "store.sqlite3"


def _post(target: Target | str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    base = target if isinstance(target, str) else target.base_url
    answer = httpx.post(f"{base}{path}", json=body, timeout=60)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()
    return result


def _count(base: str, body: dict[str, Any]) -> int:
    counted: int = _post(base, "/v1/responses/input_tokens", body)["input_tokens"]
    return counted


@pytest.mark.timeout(300)
def test_the_store_survives_sigkill_and_a_restart(fixture_model: str, store_file: Path) -> None:
    server = _start(fixture_model, store_file)
    try:
        base = server.base_url
        first = _post(base, "/v1/responses", {"input": "Say hello.", "max_output_tokens": 4})
        _post(base, "/v1/responses", {"input": "My name is Ada.", "conversation": "conv_k9",
                                      "max_output_tokens": 4})
        follow = {"input": "And then?", "previous_response_id": first["id"]}
        in_conversation = {"input": "What is my name?", "conversation": "conv_k9"}
        before = (_count(base, follow), _count(base, in_conversation))
        assert before[1] > _count(base, {"input": "What is my name?"})
    finally:
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)  # no shutdown hook, no flush
        server.process.wait(10)
    again = _start(fixture_model, store_file)
    try:
        base = again.base_url
        retrieved = httpx.get(f"{base}/v1/responses/{first['id']}", timeout=30)
        assert retrieved.status_code == 200, retrieved.text
        assert retrieved.json() == first
        assert (_count(base, follow), _count(base, in_conversation)) == before
        continued = _post(base, "/v1/responses", {**follow, "max_output_tokens": 2})
        assert continued["previous_response_id"] == first["id"]
    finally:
        again.stop()


@pytest.fixture(scope="module")
def running(fixture_model: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = _start(fixture_model, tmp_path_factory.mktemp("store") / "store.sqlite3")
    try:
        yield server.base_url
    finally:
        server.stop()


def _leave_mid_stream(base: str, body: dict[str, Any], deltas: int) -> str:
    """Open a stream, read ``deltas`` text deltas, close the connection; the response id."""
    response_id, seen = "", 0
    with httpx.stream("POST", f"{base}/v1/responses", json=body, timeout=60) as answer:
        for line in answer.iter_lines():
            if not line.startswith("data: "):
                continue
            event = json.loads(line[6:])
            if event["type"] == "response.created":
                response_id = event["response"]["id"]
            seen += event["type"] == "response.output_text.delta"
            if seen >= deltas:
                break
    return response_id


@pytest.mark.timeout(120)
def test_a_stored_stream_left_by_its_client_ends_cancelled(running: str) -> None:
    body = {"input": "Tell me a long story.", "stream": True, "max_output_tokens": 4000,
            "ignore_eos": True, "temperature": 1.0, "seed": 7}
    response_id = _leave_mid_stream(running, body, deltas=5)
    left = time.monotonic()
    while True:
        stored = httpx.get(f"{running}/v1/responses/{response_id}", timeout=10).json()
        if stored["status"] != "in_progress" or time.monotonic() - left > 1.0:
            break
        time.sleep(0.05)
    assert stored["status"] == "cancelled", stored["status"]
    assert time.monotonic() - left <= 1.5
    message = [item for item in stored["output"] if item["type"] == "message"]
    assert message and message[0]["content"][0]["text"], stored["output"]
    assert message[0]["status"] == "incomplete"
    assert 5 <= stored["usage"]["output_tokens"] < 4000


@pytest.mark.timeout(120)
def test_a_stream_with_store_false_leaves_nothing_behind(running: str) -> None:
    body = {"input": "Tell me a long story.", "stream": True, "max_output_tokens": 4000,
            "ignore_eos": True, "store": False}
    response_id = _leave_mid_stream(running, body, deltas=3)
    time.sleep(0.3)
    assert httpx.get(f"{running}/v1/responses/{response_id}", timeout=10).status_code == 404


@pytest.mark.timeout(300)
def test_a_background_response_killed_mid_generation_reads_failed(fixture_model: str,
                                                                  store_file: Path) -> None:
    server = _start(fixture_model, store_file)
    try:
        base = server.base_url
        queued = _post(base, "/v1/responses", {"input": "Tell me a long story.",
                                               "background": True, "max_output_tokens": 4000,
                                               "ignore_eos": True})
        assert queued["status"] == "queued"
        deadline = time.monotonic() + 30
        while httpx.get(f"{base}/v1/responses/{queued['id']}",
                        timeout=10).json()["status"] == "queued":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    finally:
        assert server.process is not None
        server.process.send_signal(signal.SIGKILL)  # mid-generation: no shutdown hook
        server.process.wait(10)
    again = _start(fixture_model, store_file)
    try:
        got = httpx.get(f"{again.base_url}/v1/responses/{queued['id']}", timeout=30)
        assert got.status_code == 200, got.text
        assert got.json()["status"] == "failed"
        assert got.json()["error"]["code"] == "server_error"
    finally:
        again.stop()
