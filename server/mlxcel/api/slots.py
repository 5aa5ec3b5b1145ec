"""GET /slots: each decode slot's state, then the requests waiting in the prefill queue."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..errors import RouteNotFound
from .state import AppState, app_state

router = APIRouter()


def slots_body(state: AppState) -> list[dict[str, Any]]:
    engine = state.engine
    model = state.require_model()
    entry = {"model": state.model_name, "context_size": model.context_size}
    body = [
        {"id": i, "state": "idle" if seq is None else "decoding", **entry,
         "is_processing": seq is not None}
        for i, seq in enumerate(list(engine.slots))
    ]
    queued = sum(1 for _ in engine.queue.snapshot())
    body += [
        {"id": len(body) + i, "state": "queued", **entry, "is_processing": False}
        for i in range(queued)
    ]
    return body


@router.get("/slots")
async def get_slots(request: Request) -> JSONResponse:
    state = app_state(request)
    if not state.config.slots:
        raise RouteNotFound(f"Invalid URL ({request.method} {request.url.path})")
    return JSONResponse(slots_body(state))
