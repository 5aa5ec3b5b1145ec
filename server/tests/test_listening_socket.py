"""The server's listening socket: connections accepted on it stream without Nagle's delay."""

from __future__ import annotations

import asyncio
import socket

from mlxcel.startup import listening_socket


async def _accepted_nodelay(host: str) -> tuple[int, int]:
    """(proto, TCP_NODELAY) of a connection accepted by asyncio, as uvicorn serves it, on
    ``listening_socket(host, 0)``."""
    accepted: asyncio.Future[socket.socket] = asyncio.get_running_loop().create_future()

    class Accept(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            accepted.set_result(transport.get_extra_info("socket"))

    sock = listening_socket(host, 0)
    server = await asyncio.get_running_loop().create_server(Accept, sock=sock)
    try:
        _, writer = await asyncio.open_connection(host, sock.getsockname()[1])
        conn = await asyncio.wait_for(accepted, 10)
        result = conn.proto, conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        writer.close()
        return result
    finally:
        server.close()
        await server.wait_closed()


def test_accepted_connections_have_nagle_off() -> None:
    """asyncio sets TCP_NODELAY only where the socket's ``proto`` is IPPROTO_TCP; a listener
    made with proto 0 (uvicorn's ``Config.bind_socket``) passes 0 on to every connection, and
    a streamed chunk then waits for the client's delayed ACK
    (https://github.com/Kludex/uvicorn/issues/3149)."""
    proto, nodelay = asyncio.run(_accepted_nodelay("127.0.0.1"))
    assert proto == socket.IPPROTO_TCP
    assert nodelay != 0
