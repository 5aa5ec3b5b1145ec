"""GET /metrics: Prometheus text, only when the server runs with --metrics or --metrics-port
(otherwise the route answers exactly like an unknown route)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ..errors import RouteNotFound
from ..observability import CONTENT_TYPE, engine_registry, render
from .state import app_state

router = APIRouter()


@router.get("/metrics")
async def metrics(request: Request) -> Response:
    state = app_state(request)
    if not state.config.metrics:
        raise RouteNotFound(f"Invalid URL ({request.method} {request.url.path})")
    registry = getattr(request.app.state, "mlxcel_metrics", None)
    if registry is None:
        registry = request.app.state.mlxcel_metrics = engine_registry(state.engine)
    return Response(render(registry), media_type=CONTENT_TYPE)
