"""The suite's client sends a request again, once, when the server closed (or reset) the
persistent connection it went out on without answering (RFC 9112, 9.6)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import pytest

from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.target import Target

OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"


@contextmanager
def closing_server(answered: list[bool], reset: bool = False) -> Iterator[str]:
    """Each connection reads one request (a GET: one packet); ``answered[i]`` says whether the
    i-th connection is answered, then closed on its next request, or closed at once; with
    ``reset`` it is closed with a TCP reset (what a client sees as ECONNRESET)."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        for answer in answered:
            conn, _ = listener.accept()
            conn.recv(65536)
            if answer:
                conn.sendall(OK)
                conn.recv(65536)  # the next request on this connection: closed unanswered
            if reset:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()


def test_a_request_lost_on_a_closed_connection_is_sent_again() -> None:
    with closing_server([True, True]) as url:
        client = SuiteClient(Target(url, None, None), httpx.Timeout(5.0))
        assert client.get("/x").status_code == 200
        assert client.get("/x").status_code == 200  # the first connection was closed
        client.close()


def test_a_request_the_server_always_drops_still_fails() -> None:
    with closing_server([False, False]) as url:
        client = SuiteClient(Target(url, None, None), httpx.Timeout(5.0))
        with pytest.raises(httpx.RemoteProtocolError):
            client.get("/x")
        client.close()


def test_a_request_lost_on_a_reset_connection_is_sent_again() -> None:
    with closing_server([True, True], reset=True) as url:
        client = SuiteClient(Target(url, None, None), httpx.Timeout(5.0))
        assert client.get("/x").status_code == 200
        assert client.get("/x").status_code == 200  # the first connection was reset
        client.close()


def test_a_request_the_server_always_resets_still_fails() -> None:
    with closing_server([False, False], reset=True) as url:
        client = SuiteClient(Target(url, None, None), httpx.Timeout(5.0))
        with pytest.raises(httpx.ReadError):
            client.get("/x")
        client.close()
