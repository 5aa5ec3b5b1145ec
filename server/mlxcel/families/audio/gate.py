"""The audio-only server's answer on every other route: 501 ``not_implemented`` naming what
it serves (the reference's rule for a route without its model). A pure ASGI middleware, so the
text routes need not know the server can run without a text model; unknown paths stay 404.

Which routes answer for themselves, and what another route needs, each family declares
(``families.Family``); the app hands them over, so this module names no family.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from ...error_shapes import render_error
from ...errors import NotImplementedRoute
from .checkpoints import KINDS, AudioKind

# The server's own routes that answer without a text model.
SERVER_PATHS = frozenset({"/health", "/", "/v1/models"})


def audio_only_message(method: str, path: str, model_name: str, kind: AudioKind | None,
                       need: str = "") -> str:
    label, served = (kind.label, kind.served) if kind else ("audio", "the audio routes")
    return (
        f"{method} {path} is not served: this is an audio-only server that loaded the {label} "
        f"checkpoint {model_name}. It serves {served} (and the aliases without /v1), "
        "GET /v1/models and GET /health; start mlxcel-server without --audio-model for the "
        "text routes."
        + (f" {need}" if need else "")
    )


class AudioOnlyGate:
    def __init__(self, app: ASGIApp, model_name: str, served: frozenset[str] = frozenset(),
                 needs: Mapping[str, str] | None = None) -> None:
        self.app = app
        self.model_name = model_name
        self.served = SERVER_PATHS | served
        self.needs = dict(needs or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in self.served or not self._is_route(scope):
            await self.app(scope, receive, send)
            return
        message = audio_only_message(scope["method"], path, self.model_name, self._kind(scope),
                                     self.needs.get(path, ""))
        error = NotImplementedRoute(message)
        body, status = render_error(error, path)
        await JSONResponse(body, status_code=status)(scope, receive, send)

    @staticmethod
    def _kind(scope: Scope) -> AudioKind | None:
        """The loaded checkpoint's kind (the lifespan has loaded it before any request)."""
        app = scope.get("app")
        service = app.state.mlxcel.services.audio if app is not None else None
        return KINDS[service.model.kind] if service is not None else None

    @staticmethod
    def _is_route(scope: Scope) -> bool:
        app = scope.get("app")
        routes = getattr(getattr(app, "router", None), "routes", ())
        return any(route.matches(scope)[0] != Match.NONE for route in routes)
