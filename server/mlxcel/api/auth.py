"""API-key check for every route except GET /health and GET / (a pure ASGI middleware, so
streaming responses pass through untouched), WebSocket handshakes included."""

from __future__ import annotations

import hmac

from starlette.types import ASGIApp, Receive, Scope, Send

from ..errors import AuthenticationError, MissingApiKey, MlxcelError
from .handlers import refuse

EXEMPT_PATHS = frozenset({"/health", "/"})


def presented_key(authorization: str | None) -> str | None:
    """``Bearer KEY`` or the raw key, as the reference accepts both."""
    if not authorization:
        return None
    value = authorization.strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() == "bearer":
        # "Bearer" with nothing after it (the header stripped) is no key, not the key "Bearer".
        value = rest.strip()
    return value or None


class ApiKeyMiddleware:
    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self._key = api_key.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        exempt = scope.get("method") in ("GET", "HEAD") and scope["path"] in EXEMPT_PATHS
        if scope["type"] not in ("http", "websocket") or exempt:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        # Anthropic's SDKs send the key as ``x-api-key``.
        raw = headers.get(b"authorization") or headers.get(b"x-api-key")
        key = presented_key(raw.decode("latin-1") if raw else None)
        error: MlxcelError | None = None
        if key is None:
            error = MissingApiKey("Missing API key: send it as 'Authorization: Bearer <key>' "
                                  "or 'x-api-key: <key>'.")
        elif not hmac.compare_digest(key.encode(), self._key):
            error = AuthenticationError("Invalid API key.")
        if error is None:
            await self.app(scope, receive, send)
            return
        await refuse(error, scope, receive, send)
