"""A server that runs one family's model alone (``SoleModel``: the audio-only server) answers
every other route with 501 ``not_implemented``, worded by that family (the reference's rule for
a route without its model). A pure ASGI middleware, so the text routes need not know the server
can run without a text model; unknown paths stay 404.

Which routes answer for themselves, and what another route needs, each family declares
(``families.Family``); the app hands them over, so this module names no family.
"""

from __future__ import annotations

from collections.abc import Mapping

from starlette.responses import JSONResponse
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from ..error_shapes import render_error
from ..errors import NotImplementedRoute
from .state import AppState

# The server's own routes that answer without a text model.
SERVER_PATHS = frozenset({"/health", "/", "/v1/models"})


class SoleModelGate:
    def __init__(self, app: ASGIApp, state: AppState, served: frozenset[str] = frozenset(),
                 needs: Mapping[str, str] | None = None) -> None:
        self.app = app
        self.state = state
        self.served = SERVER_PATHS | served
        self.needs = dict(needs or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        sole = self.state.sole_model
        if (sole is None or scope["type"] != "http" or path in self.served
                or not self._is_route(scope)):
            await self.app(scope, receive, send)
            return
        message = sole.refusal(self.state, scope["method"], path)
        if need := self.needs.get(path, ""):
            message += f" {need}"
        body, status = render_error(NotImplementedRoute(message), path)
        await JSONResponse(body, status_code=status)(scope, receive, send)

    @staticmethod
    def _is_route(scope: Scope) -> bool:
        app = scope.get("app")
        routes = getattr(getattr(app, "router", None), "routes", ())
        return any(route.matches(scope)[0] != Match.NONE for route in routes)
