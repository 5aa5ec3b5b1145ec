"""Issue 20, finding 5: connections that stop sending are let go, and running out of file
descriptors cannot flood the log. Against a real server process (uvicorn's protocol is what
is under test), started with one-second timeouts."""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from mlxcel.http_server import AcceptErrorLimiter, raise_open_file_limit
from mlxcel_conformance.stalled_connections import close_all, open_stalled, wait_closed
from mlxcel_conformance.target import ReferenceServer

TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def base_url(fixture_model: str) -> Iterator[str]:
    server = ReferenceServer(model=fixture_model, api_key=None, encoders=False, extra_args=(
        "--timeout-header", str(TIMEOUT_S), "--timeout-read", str(TIMEOUT_S),
        "--timeout-keep-alive", str(TIMEOUT_S)))
    target = server.start()
    try:
        yield target.base_url
    finally:
        server.stop()


def test_an_unfinished_header_block_is_closed_with_408(base_url: str) -> None:
    conns = open_stalled(base_url, {}, headers=4, bodies=0)
    try:
        wait_closed(conns, bound_s=TIMEOUT_S + 4)
        assert all(c.closed_after_s is not None for c in conns)
        assert all(c.closed_after_s >= TIMEOUT_S * 0.9 for c in conns)  # type: ignore[operator]
        assert conns[0].answer.startswith(b"HTTP/1.1 408")
    finally:
        close_all(conns)


def test_a_body_that_stops_arriving_is_a_408_in_the_family_shape(base_url: str) -> None:
    conns = open_stalled(base_url, {}, headers=0, bodies=2)
    try:
        wait_closed(conns, bound_s=TIMEOUT_S + 4)
        for conn in conns:
            assert conn.closed_after_s is not None
            assert conn.answer.startswith(b"HTTP/1.1 408"), conn.answer[:200]
            assert b'"type":"request_timeout"' in conn.answer
    finally:
        close_all(conns)


def test_a_silent_new_connection_is_closed(base_url: str) -> None:
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT_S + 4) as sock:
        start = time.monotonic()
        data = sock.recv(100)
        assert time.monotonic() - start < TIMEOUT_S + 4
        assert data.startswith(b"HTTP/1.1 408") or data == b""


def test_an_idle_kept_alive_connection_is_closed(base_url: str) -> None:
    with httpx.Client(base_url=base_url) as client:
        assert client.get("/health").status_code == 200
        time.sleep(TIMEOUT_S + 1.5)
        # the server closed the idle connection; httpx reconnects transparently
        assert client.get("/health").status_code == 200


def test_the_server_serves_normally_after_all_that(base_url: str) -> None:
    response = httpx.post(f"{base_url}/v1/chat/completions", timeout=30, json={
        "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2})
    assert response.status_code == 200


def test_accept_errors_are_rate_limited(caplog: pytest.LogCaptureFixture) -> None:
    clock = [0.0]
    limiter = AcceptErrorLimiter(interval_s=10.0, clock=lambda: clock[0])
    loop = asyncio.new_event_loop()
    try:
        context = {"message": AcceptErrorLimiter.MESSAGE, "exception": OSError(24, "Too many")}
        with caplog.at_level(logging.ERROR, logger="mlxcel.http"):
            for _ in range(2048):  # asyncio's accept loop fails this often per tick
                limiter(loop, context)
            clock[0] = 11.0
            limiter(loop, context)
        lines = [r for r in caplog.records if r.name == "mlxcel.http"]
        assert len(lines) == 2
        assert "2047 more" in lines[1].getMessage()
    finally:
        loop.close()


def test_other_loop_errors_still_reach_the_default_handler(
        caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.new_event_loop()
    try:
        with caplog.at_level(logging.ERROR, logger="asyncio"):
            AcceptErrorLimiter()(loop, {"message": "something else"})
        assert any("something else" in r.getMessage() for r in caplog.records)
    finally:
        loop.close()


def test_the_open_file_limit_is_raised_to_the_hard_limit() -> None:
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    new = raise_open_file_limit()
    assert new is not None and new >= soft
