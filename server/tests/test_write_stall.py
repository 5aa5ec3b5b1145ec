"""http_server.py: a connection whose client stops reading is aborted after the write-stall
timeout, so a response that is never read cannot hold its socket for ever. A real uvicorn
server (its flow control is what is under test) with an app that streams without end."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn

from mlxcel.http_server import guarded_protocol
from mlxcel_conformance.target import free_port

STALL_S = 1.0


def test_a_client_that_never_reads_is_disconnected_after_the_stall_timeout() -> None:
    ended: list[float] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        await send({"type": "http.response.start", "status": 200, "headers": []})
        chunk = b"x" * 65536
        started = time.monotonic()
        for _ in range(100_000):  # about 6 GB: never sent whole to a client that reads nothing
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
            if time.monotonic() - started > 30:
                break
        ended.append(time.monotonic())

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(
        app, host="127.0.0.1", port=port, loop="asyncio", log_level="warning", lifespan="off",
        http=guarded_protocol(10.0, 0, STALL_S)))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    opened = time.monotonic()
    try:
        while not ended and time.monotonic() - opened < 20:
            time.sleep(0.1)
        # uvicorn's send returns at once on a lost connection: the app's loop runs out fast
        assert ended and ended[0] - opened < 15, "the stalled connection was never closed"
    finally:
        sock.close()
        server.should_exit = True
        thread.join(10)
