"""The audio-only server's answer on every other route: 501 ``not_implemented`` naming what
it serves (the reference's rule for a route without its model). A pure ASGI middleware, so the
text routes need not know the server can run without a text model; unknown paths stay 404.
"""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from ..error_shapes import render_error
from ..errors import NotImplementedRoute
from .checkpoints import KINDS, AudioKind

SERVED_PATHS = frozenset({
    "/v1/audio/transcriptions", "/audio/transcriptions",
    "/v1/audio/translations", "/audio/translations",
    "/v1/audio/speech", "/audio/speech",  # its own 501 names what is missing
    "/health", "/", "/v1/models",
    # their own 501 names the flag that enables them
    "/v1/images/generations", "/images/generations", "/v1/images/edits", "/images/edits",
})
# What a route would need, for routes served by another kind of server.
ENABLERS = {"/v1/realtime": " GET /v1/realtime needs a Nemotron VoiceChat checkpoint."}


def audio_only_message(method: str, path: str, model_name: str, kind: AudioKind | None) -> str:
    label, served = (kind.label, kind.served) if kind else ("audio", "the audio routes")
    return (
        f"{method} {path} is not served: this is an audio-only server that loaded the {label} "
        f"checkpoint {model_name}. It serves {served} (and the aliases without /v1), "
        "GET /v1/models and GET /health; start mlxcel-server without --audio-model for the "
        "text routes."
        + ENABLERS.get(path, "")
    )


class AudioOnlyGate:
    def __init__(self, app: ASGIApp, model_name: str) -> None:
        self.app = app
        self.model_name = model_name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path in SERVED_PATHS or not self._is_route(scope):
            await self.app(scope, receive, send)
            return
        message = audio_only_message(scope["method"], path, self.model_name, self._kind(scope))
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
