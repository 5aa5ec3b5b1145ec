"""Connections that start a request and stop sending (slowloris): does the server let them go?

``open_stalled`` opens raw sockets that each send part of a request and then nothing more:
an unfinished header block, or whole headers with a body shorter than its Content-Length.
``wait_closed`` then watches them until the server closes each one (or answers it, e.g. 408),
or a bound passes.
"""

from __future__ import annotations

import contextlib
import select
import socket
import time
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class StalledConnection:
    kind: str  # "header" or "body"
    sock: socket.socket
    opened_at: float
    closed_after_s: float | None = None
    answer: bytes = b""


def _address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    return parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)


def _partial_request(kind: str, host: str, auth: dict[str, str]) -> bytes:
    lines = ["POST /v1/chat/completions HTTP/1.1", f"Host: {host}",
             *(f"{k}: {v}" for k, v in auth.items())]
    if kind == "header":  # the header block never ends
        return ("\r\n".join(lines) + "\r\nX-Stalled: ").encode()
    lines += ["Content-Type: application/json", "Content-Length: 1000"]
    return ("\r\n".join(lines) + "\r\n\r\n" + '{"messages": [').encode()


def open_stalled(base_url: str, auth: dict[str, str], headers: int, bodies: int
                 ) -> list[StalledConnection]:
    """``headers`` connections stalled inside the header block, ``bodies`` inside the body."""
    host, port = _address(base_url)
    opened: list[StalledConnection] = []
    for kind, count in (("header", headers), ("body", bodies)):
        for _ in range(count):
            sock = socket.create_connection((host, port), timeout=10)
            sock.sendall(_partial_request(kind, f"{host}:{port}", auth))
            sock.setblocking(False)
            opened.append(StalledConnection(kind, sock, time.monotonic()))
    return opened


def _poll(conn: StalledConnection) -> None:
    """Mark ``conn`` closed when the server closed it, reset it, or answered it."""
    readable, _, _ = select.select([conn.sock], [], [], 0)
    if not readable:
        return
    try:
        data = conn.sock.recv(4096)
    except (BlockingIOError, InterruptedError):
        return
    except OSError:
        data = b""
    if data:
        conn.answer += data
    conn.closed_after_s = time.monotonic() - conn.opened_at


def wait_closed(conns: list[StalledConnection], bound_s: float, poll_s: float = 0.1) -> None:
    """Poll until every connection is closed (or answered) or ``bound_s`` has passed since
    the first was opened."""
    start = min((c.opened_at for c in conns), default=time.monotonic())
    while time.monotonic() - start < bound_s:
        for conn in conns:
            if conn.closed_after_s is None:
                _poll(conn)
        if all(c.closed_after_s is not None for c in conns):
            return
        time.sleep(poll_s)


def close_all(conns: list[StalledConnection]) -> None:
    for conn in conns:
        with contextlib.suppress(OSError):
            conn.sock.close()
