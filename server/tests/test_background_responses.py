"""Background responses end to end through the app on the fixture model: queued at once, then
polled to a final status; cancelled; streamed and resumed with ``starting_after``; refused
without ``store``; and, after a restart that interrupted one, read ``failed``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.bundled import bundled_model_path
from mlxcel.config import ServerConfig
from mlxcel.families.responses.background import STOPPED
from mlxcel.families.responses.response_store import StoredResponse
from mlxcel.families.responses.store_config import StoreConfig
from mlxcel.families.responses.store_service import make_stores

LONG = {"input": "Tell me a long story.", "temperature": 0, "max_output_tokens": 2000,
        "ignore_eos": True}


def _app(store: Path) -> Any:
    return create_app(ServerConfig(model=str(bundled_model_path()),
                                   sections={"responses": StoreConfig(store_path=str(store))}))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    app = _app(tmp_path_factory.mktemp("store") / "store.sqlite3")
    with TestClient(app) as test_client:
        assert app.state.mlxcel.engine.wait_ready(60)
        yield test_client


def _poll(client: TestClient, response_id: str, limit_s: float = 60.0) -> dict[str, Any]:
    """GET until the response is stored as it ended (a cancelled one reads ``cancelled`` at
    once, and its usage once the generation has stopped)."""
    deadline = time.monotonic() + limit_s
    while True:
        body: dict[str, Any] = client.get(f"/v1/responses/{response_id}").json()
        if body["usage"] is not None or body["status"] == "failed" or \
                time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def test_a_background_response_is_queued_then_polled_to_completed(client: TestClient) -> None:
    created = client.post("/v1/responses", json={"input": "Say hello.", "temperature": 0,
                                                 "max_output_tokens": 8, "background": True})
    assert created.status_code == 200, created.text
    queued = created.json()
    assert (queued["status"], queued["background"], queued["output"]) == ("queued", True, [])
    final = _poll(client, queued["id"])
    assert final["status"] in ("completed", "incomplete"), final["status"]
    assert final["background"] is True and final["usage"]["output_tokens"] > 0
    assert final["output"][0]["content"][0]["text"]
    foreground = client.post("/v1/responses", json={"input": "Say hello.", "temperature": 0,
                                                    "max_output_tokens": 8}).json()
    assert final["output"][0]["content"][0]["text"] == \
        foreground["output"][0]["content"][0]["text"]


def test_cancel_stops_a_background_response_and_is_idempotent(client: TestClient) -> None:
    queued = client.post("/v1/responses", json={**LONG, "background": True}).json()
    cancelled = client.post(f"/v1/responses/{queued['id']}/cancel")
    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    final = _poll(client, queued["id"], 10)
    assert final["status"] == "cancelled"
    assert final["usage"]["output_tokens"] < LONG["max_output_tokens"]
    again = client.post(f"/v1/responses/{queued['id']}/cancel")
    assert again.status_code == 200 and again.json()["status"] == "cancelled"


def test_only_a_background_response_can_be_cancelled(client: TestClient) -> None:
    done = client.post("/v1/responses", json={"input": "hi", "max_output_tokens": 2}).json()
    refused = client.post(f"/v1/responses/{done['id']}/cancel")
    assert refused.status_code == 400
    assert refused.json()["error"]["type"] == "invalid_request_error"
    assert client.post("/v1/responses/resp_missing/cancel").status_code == 404


def test_background_needs_store(client: TestClient) -> None:
    refused = client.post("/v1/responses", json={"input": "hi", "background": True,
                                                 "store": False})
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == "background"


def test_a_background_stream_resumes_after_starting_after(client: TestClient) -> None:
    streamed = client.post("/v1/responses", json={"input": "Say hello.", "temperature": 0,
                                                  "max_output_tokens": 12, "background": True,
                                                  "stream": True})
    assert streamed.status_code == 200, streamed.text
    events = _events(streamed.text)
    kinds = [event["type"] for event in events]
    assert kinds[:3] == ["response.created", "response.queued", "response.in_progress"], kinds
    assert kinds[-1] in ("response.completed", "response.incomplete")
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    response_id = events[0]["response"]["id"]
    after = 3
    resumed = client.get(f"/v1/responses/{response_id}",
                         params={"stream": "true", "starting_after": after})
    assert resumed.status_code == 200, resumed.text
    assert _events(resumed.text) == events[after + 1:]
    whole = client.get(f"/v1/responses/{response_id}?stream=true")
    assert _events(whole.text) == events


def test_a_background_stream_read_while_generating(client: TestClient) -> None:
    queued = client.post("/v1/responses", json={**LONG, "max_output_tokens": 64,
                                                "background": True}).json()
    streamed = client.get(f"/v1/responses/{queued['id']}?stream=true&starting_after=0")
    events = _events(streamed.text)
    assert events[0]["sequence_number"] == 1
    assert events[-1]["type"] == "response.incomplete"
    assert _poll(client, queued["id"])["status"] == "incomplete"


@pytest.mark.parametrize("query", ["stream=maybe", "stream=true&starting_after=-1",
                                   "stream=true&starting_after=x", "starting_after=1.5"])
def test_bad_stream_queries_are_400s(client: TestClient, query: str) -> None:
    done = client.post("/v1/responses", json={"input": "hi", "max_output_tokens": 2,
                                              "background": True}).json()
    answer = client.get(f"/v1/responses/{done['id']}?{query}")
    assert answer.status_code == 400, answer.text


def test_a_foreground_response_cannot_be_streamed_from_get(client: TestClient) -> None:
    done = client.post("/v1/responses", json={"input": "hi", "max_output_tokens": 2}).json()
    answer = client.get(f"/v1/responses/{done['id']}?stream=true")
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "stream"


def test_a_background_response_interrupted_by_a_restart_reads_failed(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    # What a process killed mid-generation leaves: the response stored unfinished, queued.
    before = make_stores(10, 0, 10, 0, path=str(store))
    body = {"id": "resp_interrupted", "object": "response", "status": "in_progress",
            "background": True, "error": None, "output": []}
    before.responses.put("resp_interrupted", StoredResponse(body, []), unfinished=True)
    before.db._conn.close()  # no checkpoint, no clean close: as SIGKILL leaves it
    app = _app(store)
    with TestClient(app) as client:
        got = client.get("/v1/responses/resp_interrupted")
        assert got.status_code == 200, got.text
        assert got.json()["status"] == "failed"
        assert got.json()["error"] == {"code": "server_error", "message": STOPPED}


def test_a_background_response_stopped_by_a_shutdown_reads_failed(tmp_path: Path) -> None:
    store = tmp_path / "store.sqlite3"
    app = _app(store)
    with TestClient(app) as client:
        assert app.state.mlxcel.engine.wait_ready(60)
        queued = client.post("/v1/responses", json={**LONG, "background": True}).json()
        time.sleep(0.3)  # generating when the server stops
    after = make_stores(10, 0, 10, 0, path=str(store))
    try:
        stored = after.responses.get(queued["id"])
        assert stored is not None
        assert stored.body["status"] == "failed", (stored.body["status"], stored.body["usage"])
        assert stored.body["error"]["code"] == "server_error"
    finally:
        after.close()
