"""``GaugedListener``: near the descriptor limit a new connection is answered 503 and closed
at ``accept()``, and accepting goes on (no ``EMFILE``, so asyncio never pauses accepting)."""

from __future__ import annotations

import socket

import pytest

from mlxcel.http_server import ACCEPT_HEADROOM, GaugedListener, gauged


def _listener(ceiling: int) -> GaugedListener:
    plain = socket.socket()
    plain.bind(("127.0.0.1", 0))
    listener = gauged(plain, 1 << 20)
    assert isinstance(listener, GaugedListener)
    assert listener.fd_ceiling == (1 << 20) - ACCEPT_HEADROOM
    listener.fd_ceiling = ceiling  # a test cannot fill the table: the gauge is lowered
    listener.listen(8)
    listener.setblocking(False)
    return listener


def _connect(listener: socket.socket) -> socket.socket:
    client = socket.create_connection(listener.getsockname()[:2], timeout=5)
    return client


def test_below_the_ceiling_a_connection_is_accepted() -> None:
    with _listener(1 << 20) as listener, _connect(listener) as client:
        conn, _ = _wait_accept(listener)
        with conn:
            conn.sendall(b"hi")
            assert client.recv(2) == b"hi"


def test_at_the_ceiling_it_is_answered_503_and_closed_and_accepting_goes_on() -> None:
    with _listener(3) as listener, _connect(listener) as first, _connect(listener) as second:
        with pytest.raises(BlockingIOError):  # both refused; then none is left
            _wait_accept(listener, tries=1)
        for client in (first, second):
            answer = b""
            while chunk := client.recv(4096):
                answer += chunk
            assert answer.startswith(b"HTTP/1.1 503 ")
            assert b"too_many_connections" in answer


def _wait_accept(listener: socket.socket, tries: int = 50) -> tuple[socket.socket, object]:
    import time

    for attempt in range(tries):
        try:
            return listener.accept()
        except BlockingIOError:
            if attempt == tries - 1:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


def test_no_limit_leaves_the_socket_as_it_is() -> None:
    with socket.socket() as plain:
        assert gauged(plain, None) is plain
