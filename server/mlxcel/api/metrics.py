"""GET /metrics: Prometheus text, only when the server runs with --metrics or --metrics-port
(otherwise the route answers exactly like an unknown route)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..errors import RouteNotFound
from ..observability import CONTENT_TYPE, render
from .state import app_state

router = APIRouter()


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    registry = app_state(request).services.metrics
    if registry is None:  # made with the app when the server runs with --metrics
        raise RouteNotFound(f"Invalid URL ({request.method} {request.url.path})")
    return Response(render(registry), media_type=CONTENT_TYPE)
