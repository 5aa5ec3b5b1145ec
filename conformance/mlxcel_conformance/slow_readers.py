"""Clients that are slow on purpose: streams whose client never reads, and request bodies
trickled a byte at a time.

``open_unread_streams`` sends a streaming request on raw sockets with a small receive buffer
and never reads from them: the server's writes soon block, and what it does then (keep
decoding and buffering, or pause or cancel the stream) shows in its memory. ``Trickler``
opens connections whose body (or chunked body) arrives one byte per interval, each byte well
within any read timeout, so only a deadline on the whole body ever ends them.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

SMALL_RECEIVE_BUFFER = 4096


def address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    return parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)


def _head(path: str, host: str, auth: dict[str, str], extra: list[str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}", "Content-Type: application/json",
             *(f"{k}: {v}" for k, v in auth.items()), *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def open_unread_streams(base_url: str, auth: dict[str, str], path: str, body: dict[str, Any],
                        count: int) -> list[socket.socket]:
    """``count`` sockets that each send one streaming request and never read its answer."""
    host, port = address(base_url)
    payload = json.dumps(body).encode()
    opened = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        # before connecting, so that the advertised window is small from the start
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SMALL_RECEIVE_BUFFER)
        sock.settimeout(10)
        sock.connect((host, port))
        sock.sendall(_head(path, f"{host}:{port}", auth,
                           [f"Content-Length: {len(payload)}"]) + payload)
        opened.append(sock)
    return opened


def close_sockets(socks: list[socket.socket]) -> None:
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.close()


@dataclass
class Trickler:
    """``count`` connections sending a body one byte per ``interval_s`` until stopped, or
    until the server answers or closes them (``ended``)."""

    base_url: str
    auth: dict[str, str]
    count: int
    interval_s: float = 1.0
    chunked_share: float = 0.5  # the rest declare a Content-Length they never reach
    ended: int = 0
    _socks: list[socket.socket] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Trickler:
        host, port = address(self.base_url)
        chunked = int(self.count * self.chunked_share)
        for i in range(self.count):
            # a declared length under any body limit (a larger one is refused at once: 413)
            extra = (["Transfer-Encoding: chunked"] if i < chunked
                     else ["Content-Length: 100000"])
            sock = socket.create_connection((host, port), timeout=10)
            sock.sendall(_head("/v1/chat/completions", f"{host}:{port}", self.auth, extra))
            sock.setblocking(False)
            self._socks.append(sock)
        self._chunked = set(self._socks[:chunked])
        self._thread = threading.Thread(target=self._run, name="trickler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)
        close_sockets(self._socks)

    def _run(self) -> None:
        live = list(self._socks)
        while live and not self._stop.wait(self.interval_s):
            for sock in list(live):
                byte = b"1\r\n \r\n" if sock in self._chunked else b" "
                try:
                    sock.send(byte)
                    if sock.recv(1):  # an answer (e.g. 408): the server ended it
                        raise ConnectionError
                except BlockingIOError:
                    continue
                except OSError:
                    live.remove(sock)
                    self.ended += 1
