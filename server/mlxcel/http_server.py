"""uvicorn, configured for clients that misbehave.

- **Header timeout**: uvicorn arms no timer on a new connection, nor on one that has sent part
  of a request; a client that never finishes its header block holds a socket (and a file
  descriptor) for ever. ``GuardedH11Protocol`` closes such a connection, with a 408, after
  ``--timeout-header`` seconds. (The body's read timeout is the ASGI guard's: api/guard.py;
  idle keep-alive connections are uvicorn's own ``--timeout-keep-alive``.)
- **Accept errors that cannot flood the log**: when the process runs out of file descriptors,
  asyncio logs a traceback for every failed ``accept()``, thousands per second (the accept
  loop goes on after the error); ``AcceptErrorLimiter`` logs the first, then one line with a
  count per interval.
- **File descriptors**: the soft limit is raised to the hard limit at startup, so the
  header timeout, not the descriptor limit, is what bounds idle connections.
- **Write stalls**: a connection whose client stops reading (the transport has paused
  writing, above its high-water mark) for ``--stream-stall-timeout`` seconds is aborted, so a
  finished answer that is never read does not hold its socket and buffers for ever (the
  engine side of a never-read stream is bounded by engine/handle.py).
- **Connections**: past ``--max-connections`` open connections (by default the open-file
  limit less a reserve for the model's files, logs and the engine), the oldest connection
  that is idle or still sending its request is closed (408) to make room; when every one has
  a request being answered, the new one is answered 503 and closed before its request is
  read. A burst faster than that is refused at ``accept()`` (``GaugedListener``). The
  process never runs out of descriptors, so ``accept()`` keeps working, and slow clients,
  however many, cannot keep a new client (a health check) out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from .rate_limited_log import RateLimitedLog

log = logging.getLogger("mlxcel.http")
_log_refused = RateLimitedLog(log, level=logging.WARNING)
_log_stalled = RateLimitedLog(log)

REQUEST_TIMEOUT = (b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain\r\n"
                   b"content-length: 0\r\nconnection: close\r\n\r\n")
# The family is unknown before the request is read: OpenAI's error shape, the default.
_BUSY_BODY = (b'{"error":{"message":"Too many open connections (--max-connections); retry '
              b'later.","type":"server_busy","code":"too_many_connections"}}')
TOO_MANY_CONNECTIONS = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
                        b"content-length: " + str(len(_BUSY_BODY)).encode() +
                        b"\r\nretry-after: 1\r\nconnection: close\r\n\r\n" + _BUSY_BODY)
# Descriptors kept for what is not a client connection: model and tokenizer files, logs,
# the prompt cache, the engine's pipes.
FD_RESERVE = 128
# The descriptors ``GaugedListener`` keeps free of client connections at accept() time.
ACCEPT_HEADROOM = 64


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline on each request's header block."""

    header_timeout_s: float = 10.0
    max_connections: int = 0  # 0: no cap
    write_stall_timeout_s: float = 0.0  # 0: none

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._header_timer: asyncio.TimerHandle | None = None
        self._write_timer: asyncio.TimerHandle | None = None
        self._opened_at = self.loop.time()
        if self.max_connections and len(self.connections) > self.max_connections:
            victim = self._oldest_still_sending()
            if victim is None:
                _log_refused(f"refused a connection: {len(self.connections) - 1} are open, "
                             f"each with a request being answered (--max-connections "
                             f"{self.max_connections})")
                with contextlib.suppress(Exception):
                    transport.write(TOO_MANY_CONNECTIONS)
                transport.close()
                return
            _log_refused(f"closed the oldest connection still sending its request: "
                         f"{self.max_connections} are open (--max-connections)")
            victim._evict()
        self._arm_header_timer()

    def _still_sending(self) -> bool:
        """Idle, or still sending its request's head or body, with no answer under way: a
        connection the server may let go at no cost to a request it is answering."""
        cycle = self.cycle
        answering = cycle is not None and cycle.response_started and not cycle.response_complete
        return (self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not answering
                and not self.transport.is_closing())

    def _oldest_still_sending(self) -> GuardedH11Protocol | None:
        """At the cap, a slow or idle client gives way to a new one (a health check, say):
        thousands of trickled bodies then cannot lock everyone else out."""
        candidates = [c for c in self.connections if c is not self
                      and isinstance(c, GuardedH11Protocol) and c._still_sending()]
        return min(candidates, key=lambda c: c._opened_at, default=None)

    def _evict(self) -> None:
        with contextlib.suppress(Exception):
            if self.cycle is None or not self.cycle.response_started:
                self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            # no complete request yet (or a new one begun on a kept-alive connection)
            if self._header_timer is None and self.conn.trailing_data[0]:
                self._arm_header_timer()
        else:
            self._disarm_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._disarm_header_timer()  # uvicorn's keep-alive timer takes over

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        self._disarm_write_timer()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self.write_stall_timeout_s and getattr(self, "_write_timer", None) is None:
            self._write_timer = self.loop.call_later(self.write_stall_timeout_s,
                                                     self._write_stalled)

    def resume_writing(self) -> None:
        self._disarm_write_timer()
        super().resume_writing()

    def _disarm_write_timer(self) -> None:
        timer = getattr(self, "_write_timer", None)
        if timer is not None:
            timer.cancel()
            self._write_timer = None

    def _write_stalled(self) -> None:
        self._write_timer = None
        _log_stalled(f"closed a connection whose client read nothing for "
                     f"{self.write_stall_timeout_s:g} s (--stream-stall-timeout)")
        self.transport.abort()  # what is unsent is dropped: nobody was reading it

    def _arm_header_timer(self) -> None:
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timed_out)

    def _disarm_header_timer(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
            return
        with contextlib.suppress(Exception):
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()


def guarded_protocol(header_timeout_s: float, max_connections: int = 0,
                     write_stall_timeout_s: float = 0.0) -> type[GuardedH11Protocol]:
    """A ``GuardedH11Protocol`` class with its timeouts and connection cap (uvicorn
    instantiates the class)."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,),
                {"header_timeout_s": max(0.1, header_timeout_s),
                 "max_connections": max(0, max_connections),
                 "write_stall_timeout_s": max(0.0, write_stall_timeout_s)})


def connection_cap(requested: int, open_file_limit: int | None) -> int:
    """``--max-connections``, or when 0 the open-file limit less ``FD_RESERVE`` (0: none)."""
    if requested > 0:
        return requested
    return max(1, open_file_limit - FD_RESERVE) if open_file_limit else 0


class GaugedListener(socket.socket):
    """A listening socket whose ``accept()`` never lets a burst of connections exhaust the
    process's descriptors.

    asyncio accepts up to the listen backlog (uvicorn's 2,048) of connections each time the
    listening socket is readable, before any of them reaches ``connection_made`` (where the
    cap closes the oldest idle one to make room). A burst at the cap thus ran the process out
    of descriptors, and on ``EMFILE`` asyncio stops accepting for a second, long enough for
    the kernel's accept queue to overflow: with 4,200 trickled bodies against a limit of
    4,096, health checks got no answer for 5 s. Here a connection whose descriptor is within
    ``ACCEPT_HEADROOM`` of the limit is answered 503 (``too_many_connections``) and closed at
    once, and accepting goes on. Linux gives ``accept()`` the lowest free descriptor, so the
    number of the new one is how full the table is."""

    fd_ceiling: int = 0

    def accept(self) -> tuple[socket.socket, Any]:
        while True:
            conn, address = super().accept()  # BlockingIOError when none is left: asyncio's
            if not self.fd_ceiling or conn.fileno() < self.fd_ceiling:
                return conn, address
            with contextlib.suppress(OSError):
                conn.setblocking(False)
                conn.send(TOO_MANY_CONNECTIONS)
            conn.close()
            _log_refused(f"refused a connection at accept(): descriptor {self.fd_ceiling} "
                         f"of {self.fd_ceiling + ACCEPT_HEADROOM} reached")


def gauged(sock: socket.socket, open_file_limit: int | None) -> socket.socket:
    """``sock`` as a ``GaugedListener`` for ``open_file_limit`` (as is without a limit)."""
    if not open_file_limit or open_file_limit <= 2 * ACCEPT_HEADROOM:
        return sock
    inheritable = sock.get_inheritable()
    listener = GaugedListener(sock.family, sock.type, sock.proto, fileno=sock.detach())
    listener.set_inheritable(inheritable)
    listener.fd_ceiling = open_file_limit - ACCEPT_HEADROOM
    return listener


class AcceptErrorLimiter:
    """An event-loop exception handler that rate-limits ``accept()`` resource errors."""

    MESSAGE = "socket.accept() out of system resource"

    def __init__(self, interval_s: float = 10.0, clock: Any = time.monotonic) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._last: float | None = None
        self.suppressed = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if context.get("message") != self.MESSAGE:
            loop.default_exception_handler(context)
            return
        now = self._clock()
        if self._last is not None and now - self._last < self.interval_s:
            self.suppressed += 1
            return
        exc = context.get("exception")
        log.error("cannot accept connections: %s (%d more such errors in the last %.0f s); "
                  "raise the open-file limit (ulimit -n) or lower --timeout-header",
                  exc, self.suppressed, self.interval_s if self._last is not None else 0.0)
        self._last, self.suppressed = now, 0


def install_accept_error_limiter(loop: asyncio.AbstractEventLoop) -> None:
    loop.set_exception_handler(AcceptErrorLimiter())


def raise_open_file_limit() -> int | None:
    """Raise the soft RLIMIT_NOFILE to the hard limit; the new soft limit (None off POSIX)."""
    try:
        import resource
    except ImportError:  # pragma: no cover - Windows
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 65536)
    if target > soft:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            return target
    return soft
