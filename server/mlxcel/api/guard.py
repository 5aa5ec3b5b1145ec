"""What reaches the routes at all: a pure ASGI middleware in front of every route.

- **Browsers**: a request carrying an ``Origin`` that is not allowed gets 403 (a web page the
  user visits could otherwise POST ``text/plain`` bodies, which need no CORS preflight, to a
  local server). Allowed: the server's own origin (same scheme and Host), the origins of
  ``--allowed-origins`` (``*`` allows any). Clients that are not browsers send no ``Origin``
  and are not affected, whatever their Content-Type.
- **DNS rebinding**: on a server bound to a loopback address, a ``Host`` that is neither a
  loopback name or address, nor the configured ``--host``, nor one of ``--allowed-hosts``, gets
  403: a page on ``evil.example`` rebound to 127.0.0.1 still says ``Host: evil.example``.
- **Body size**: a declared ``Content-Length`` over ``--max-body-bytes`` is 413 before any byte
  of the body is read; a chunked body is counted as it arrives and refused at the limit.
- **Body read timeout**: a body that stops arriving for ``--timeout-read`` seconds is 408.

Refusals are rendered by ``handlers.refuse``: the family's own error shape (Anthropic's on its
routes); a WebSocket handshake is refused the same way (HTTP 403 before it is accepted), so the
Origin and Host rules hold for WebSocket routes too (a browser sends ``Origin`` on every
handshake, RFC 6455 section 10.2). A request carrying several ``Origin`` headers is refused.
"""

from __future__ import annotations

import asyncio
import ipaddress
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..config import ServerConfig
from ..errors import Forbidden, MlxcelError, RequestTimeout, RequestTooLarge
from .handlers import refuse

LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})


@dataclass(frozen=True)
class GuardSettings:
    max_body_bytes: int
    read_timeout_s: float
    bound_host: str = "127.0.0.1"
    allowed_origins: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()

    @classmethod
    def of(cls, config: ServerConfig) -> GuardSettings:
        return cls(max_body_bytes=config.limits.max_body_bytes,
                   read_timeout_s=config.timeout_read_s, bound_host=config.host,
                   allowed_origins=config.allowed_origins, allowed_hosts=config.allowed_hosts)


def is_loopback(host: str) -> bool:
    name = host.strip("[]").lower()
    if name in LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(host_header: str) -> str:
    """The name of a Host header, without its port (``[::1]:8080`` -> ``::1``)."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


# A WebSocket handshake's own origin is the page's http(s) origin (RFC 6455 section 4.1).
PAGE_SCHEME = {"ws": "http", "wss": "https"}


def refusal(settings: GuardSettings, headers: dict[bytes, bytes], scheme: str,
            origins: int = 0) -> MlxcelError | None:
    """Why a request must be refused for its Host or Origin, or None; ``origins`` is how
    many ``Origin`` headers it carried (``headers`` keeps only the last)."""
    if origins > 1:
        # RFC 6454 section 7.3: a user agent sends at most one; which one a proxy or
        # framework reads differs, so a foreign one hidden before the server's own is refused.
        return Forbidden("A request may carry one Origin header, not several.",
                         code="origin_not_allowed")
    scheme = PAGE_SCHEME.get(scheme, scheme)
    host = headers.get(b"host", b"").decode("latin-1")
    if host and is_loopback(settings.bound_host):
        name = host_name(host)
        allowed = {host_name(h) for h in settings.allowed_hosts} | {settings.bound_host.lower()}
        if not (is_loopback(name) or name in allowed or "*" in settings.allowed_hosts):
            return Forbidden(f"Host {name[:100]!r} is not served: this server is bound to a "
                             "loopback address (allow other names with --allowed-hosts).",
                             code="host_not_allowed")
    raw_origin = headers.get(b"origin")
    if raw_origin is None:
        return None
    origin = raw_origin.decode("latin-1").strip().rstrip("/").lower()
    allowed_origins = {o.rstrip("/").lower() for o in settings.allowed_origins}
    if "*" in allowed_origins or origin in allowed_origins:
        return None
    if host and origin == f"{scheme}://{host.lower()}":
        return None  # the server's own origin
    return Forbidden(f"Origin {origin[:100]!r} is not allowed to call this server (allow it "
                     "with --allowed-origins).", code="origin_not_allowed")


class RequestGuard:
    def __init__(self, app: ASGIApp, settings: GuardSettings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        pairs = scope.get("headers") or []
        headers = dict(pairs)
        origins = sum(1 for name, _ in pairs if name == b"origin")
        error = refusal(self.settings, headers, scope.get("scheme", "http"), origins)
        declared = headers.get(b"content-length", b"")
        if error is None and declared.isdigit() and int(declared) > self.settings.max_body_bytes:
            error = self._too_large()
        if error is not None:
            await refuse(error, scope, receive, send)
            return
        if scope["type"] == "websocket":  # frames, not a body: nothing to count or time
            await self.app(scope, receive, send)
            return
        await self.app(scope, self._bounded(receive), send)

    def _too_large(self) -> RequestTooLarge:
        return RequestTooLarge(f"Request exceeds the maximum size of "
                               f"{self.settings.max_body_bytes} bytes (--max-body-bytes).")

    def _bounded(self, receive: Receive) -> Receive:
        """``receive`` that counts body bytes and times out a body that stops arriving."""
        received = 0
        done = False
        limit, timeout = self.settings.max_body_bytes, self.settings.read_timeout_s

        async def bounded_receive() -> Message:
            nonlocal received, done
            if done:  # the body is in: later calls wait for a disconnect, for as long as needed
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), timeout)
            except asyncio.TimeoutError:
                raise RequestTimeout(f"The request body stopped arriving for {timeout:g} s "
                                     "(--timeout-read).") from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise self._too_large()
                done = not message.get("more_body", False)
            else:
                done = True
            return message

        return bounded_receive
