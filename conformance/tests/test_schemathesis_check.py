"""The schemathesis check fuzzes invalid requests too: a server that answers a schema-invalid
``/tokenize`` body with a 500 fails it, one that answers 400 in the documented shape passes.
Tiny local HTTP servers stand in for the server (the point is the check, not inference)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mlxcel_conformance.checks.fuzzing import run_schemathesis
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.target import Target


def _handler(invalid_status: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            valid = isinstance(body, dict) and isinstance(body.get("content"), str) and all(
                isinstance(body.get(flag, False), bool) for flag in ("add_special", "with_pieces"))
            if valid:
                status, answer = 200, {"tokens": [1, 2]}
            else:
                status = invalid_status
                kind = "invalid_request_error" if status == 400 else "server_error"
                answer = {"error": {"message": "bad body", "type": kind, "param": None,
                                    "code": None}}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    return Handler


@contextmanager
def _server(invalid_status: int) -> Iterator[Target]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(invalid_status))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield Target(f"http://127.0.0.1:{httpd.server_address[1]}")
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_invalid_requests_answered_400_pass() -> None:
    with _server(400) as target:
        run_schemathesis(target, "POST", "/tokenize", 6)


def test_a_500_on_an_invalid_request_fails_the_check() -> None:
    """Valid requests alone never reach the fault: only the invalid-data pass finds it."""
    with _server(500) as target, pytest.raises(ConformanceFailure) as failure:
        run_schemathesis(target, "POST", "/tokenize", 6)
    assert "(invalid requests)" in str(failure.value)
