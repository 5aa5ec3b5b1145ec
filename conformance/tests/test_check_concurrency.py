"""Tests for checks/concurrency.py and stream_load.py: many chat streams at once.

The fakes are stdlib socket servers, because the faults are below HTTP's happy path: a
connection closed without an answer, a stream cut before `[DONE]`, a keep-alive connection
dropped on its next request. The reference server must pass, with its 503 backpressure.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import BinaryIO

import pytest
from real_stream_corpus import rejects

from mlxcel_conformance.checks.concurrency import (
    StreamOutcome,
    check_concurrent_streams_complete,
    classify_chat_stream,
)
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.flows import chat_payload
from mlxcel_conformance.stream_load import (
    streams_on_own_connections,
    streams_over_keepalive_pool,
)
from mlxcel_conformance.target import ReferenceServer, Target

CHUNK = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
         "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}
SSE_BODY = f"data: {json.dumps(CHUNK)}\n\ndata: [DONE]\n\n".encode()
BUSY_BODY = json.dumps({"error": {"message": "server busy", "type": "server_busy",
                                  "param": None, "code": None}}).encode()
PAYLOAD = chat_payload(None, max_tokens=8, stream=True)

# --- classification ---------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "content_type", "text", "kind"), [
    (200, "text/event-stream", SSE_BODY.decode(), "complete"),
    (200, "text/event-stream", f"data: {json.dumps(CHUNK)}\n\n", "truncated"),
    (200, "text/event-stream", f"data: {json.dumps(CHUNK)}\n\ndata: [DO", "truncated"),
    (200, "text/event-stream", "data: [DONE]\n\n", "malformed"),
    (200, "text/event-stream", "data: {not json\n\ndata: [DONE]\n\n", "malformed"),
    (200, "text/event-stream", 'data: {"error": {"message": "x"}}\n\ndata: [DONE]\n\n',
     "error_event"),
    (200, "application/json", "{}", "malformed"),
    (503, "application/json", BUSY_BODY.decode(), "busy_503"),
    (429, "application/json; charset=utf-8", BUSY_BODY.decode(), "busy_429"),
    (503, "application/json", '{"error": "busy"}', "busy_bad_body"),
    (503, "text/event-stream", BUSY_BODY.decode(), "busy_bad_body"),
    (500, "application/json", BUSY_BODY.decode(), "http_500"),
])
def test_classify_chat_stream(status: int, content_type: str, text: str, kind: str) -> None:
    assert classify_chat_stream(status, content_type, text).kind == kind


def test_check_passes_completions_and_busy_answers() -> None:
    outcomes = [StreamOutcome("complete", 200)] * 3 + [StreamOutcome("busy_503", 503)]
    assert check_concurrent_streams_complete(outcomes, mode="t") == {"complete": 3, "busy_503": 1}


def test_check_fails_with_counts_and_one_error() -> None:
    outcomes = [StreamOutcome("complete", 200), StreamOutcome("dropped", None, "reset by peer"),
                StreamOutcome("busy_503", 503), StreamOutcome("dropped", None, "closed")]
    with rejects("concurrent_streams_complete") as failure:
        check_concurrent_streams_complete(outcomes, mode="t")
    assert failure.value.evidence["counts"] == {"complete": 1, "dropped": 2, "busy_503": 1}
    assert failure.value.evidence["first_error"]["detail"] == "reset by peer"


def test_check_fails_when_every_stream_is_refused() -> None:
    with rejects("concurrent_streams_complete"):
        check_concurrent_streams_complete([StreamOutcome("busy_503", 503)] * 4, mode="t")


# --- a fake server scripted per request --------------------------------------------------------

Action = Callable[[int], str]  # request number (arrival order) -> what the fake does


def _read_request(rfile: BinaryIO) -> bool:
    """Read one request's head and body from `rfile`; False at a closed connection."""
    length = 0
    line = rfile.readline()
    if not line:
        return False
    while line not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
        line = rfile.readline()
    rfile.read(length)
    return True


def _response(status: str, content_type: str, body: bytes, *, length: bool = True) -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
    head += f"Content-Length: {len(body)}\r\n" if length else "Connection: close\r\n"
    return head.encode() + b"\r\n" + body


def _answer(action: str) -> tuple[bytes, bool]:
    """The bytes the fake writes for `action`, and whether it then closes the connection."""
    if action == "complete":
        return _response("200 OK", "text/event-stream", SSE_BODY), False
    if action == "busy":
        return _response("503 Service Unavailable", "application/json", BUSY_BODY), False
    if action == "truncate":  # one chunk, then the connection ends: no [DONE]
        body = f"data: {json.dumps(CHUNK)}\n\n".encode()
        return _response("200 OK", "text/event-stream", body, length=False), True
    if action == "close":
        return b"", True
    raise AssertionError(action)


class _ScriptedServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # the fake's own backlog must not be what drops connections

    def __init__(self, script: Action) -> None:
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.script = script
        self.count = 0
        self.lock = threading.Lock()

    def next_action(self) -> str:
        with self.lock:
            self.count += 1
            return self.script(self.count)


class _ScriptedHandler(socketserver.StreamRequestHandler):
    server: _ScriptedServer

    def handle(self) -> None:
        while _read_request(self.rfile):
            data, close = _answer(self.server.next_action())
            self.wfile.write(data)
            self.wfile.flush()
            if close:
                return


@contextmanager
def scripted_server(script: Action) -> Iterator[Target]:
    server = _ScriptedServer(script)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Target(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()


def _every(n: int, action: str) -> Action:
    return lambda number: action if number % n == 0 else "complete"


def _failure_counts(run: Callable[[], list[StreamOutcome]]) -> dict[str, int]:
    with pytest.raises(ConformanceFailure) as failure:
        check_concurrent_streams_complete(run(), mode="fake")
    assert failure.value.check == "concurrent_streams_complete"
    counts: dict[str, int] = failure.value.evidence["counts"]
    return counts


def test_connections_closed_without_an_answer_fail() -> None:
    with scripted_server(_every(4, "close")) as target:
        counts = _failure_counts(lambda: streams_on_own_connections(target, PAYLOAD, 32, 20))
    assert counts == {"complete": 24, "dropped": 8}


def test_truncated_streams_fail() -> None:
    with scripted_server(_every(8, "truncate")) as target:
        counts = _failure_counts(lambda: streams_on_own_connections(target, PAYLOAD, 32, 20))
    assert counts == {"complete": 28, "truncated": 4}


def test_well_formed_503_answers_pass() -> None:
    with scripted_server(_every(3, "busy")) as target:
        outcomes = streams_on_own_connections(target, PAYLOAD, 32, 20)
    assert check_concurrent_streams_complete(outcomes, mode="fake") == {
        "complete": 22, "busy_503": 10}


def test_keepalive_connection_dropped_on_reuse_fails() -> None:
    # Like llama-server: the connection stays open after a complete answer, then the next
    # request on it is met with a close.
    with scripted_server(_every(10, "close")) as target:
        counts = _failure_counts(lambda: streams_over_keepalive_pool(target, PAYLOAD, 64, 8, 20))
    assert counts == {"complete": 58, "dropped": 6}


def test_keepalive_pool_reuses_connections() -> None:
    with scripted_server(lambda number: "complete") as target:
        outcomes = streams_over_keepalive_pool(target, PAYLOAD, 64, 8, 20)
        assert check_concurrent_streams_complete(outcomes, mode="fake") == {"complete": 64}


def test_a_server_that_never_answers_times_out() -> None:
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    try:
        target = Target(f"http://127.0.0.1:{listener.getsockname()[1]}")
        counts = _failure_counts(lambda: streams_on_own_connections(target, PAYLOAD, 4, 1.0))
    finally:
        listener.close()
    assert counts == {"timeout": 4}


# --- the reference server ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def reference() -> Iterator[Target]:
    # A short queue, so the 32 streams are certain to meet the server's 503 backpressure.
    server = ReferenceServer(extra_args=("--parallel", "2", "--max-queue", "4"))
    target = server.start()
    try:
        yield target
    finally:
        server.stop()


def test_reference_server_passes_on_own_connections(reference: Target) -> None:
    outcomes = streams_on_own_connections(reference, PAYLOAD, 32, 60)
    counts = check_concurrent_streams_complete(outcomes, mode="reference")
    assert counts.get("busy_503", 0) >= 1 and set(counts) == {"complete", "busy_503"}


def test_reference_server_passes_over_a_keepalive_pool(reference: Target) -> None:
    outcomes = streams_over_keepalive_pool(reference, PAYLOAD, 128, 8, 60)
    counts = check_concurrent_streams_complete(outcomes, mode="reference")
    assert set(counts) <= {"complete", "busy_503"} and counts["complete"] >= 1
