"""GET /health (also /v1/health, as llama-server) and GET /: liveness, loading state, batch
and observability counters, and what the families add (``families.Family.health``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .state import AppState, app_state

router = APIRouter()


def health_body(state: AppState) -> tuple[int, dict[str, Any]]:
    engine = state.engine
    if engine.state != "ready" or engine.model is None:
        return 503, {"status": "loading model"}
    max_batch = engine.max_batch_size
    active = engine.active_sequences
    busy = active >= max_batch
    counters = asdict(engine.stats)
    counters.pop("active_sequences")
    body = {
        "status": "no slot available" if busy else "ok",
        "model": state.model_name,
        "batch": {
            "active_sequences": active,
            "queue_depth": engine.queue_depth,
            "max_batch_size": max_batch,
            "max_queue": engine.max_queue,
        },
        "observability": {
            **counters,
            "current_batch_size": active,
            "cache_pool_active": len(engine.prompt_cache) if engine.prompt_cache is not None else 0,
        },
        "context_size": engine.model.context_size,
        "tool_call_parser": "mlxcel" if engine.model.supports_tools else None,
    }
    return (503 if busy else 200), body


@router.get("/health")
@router.get("/v1/health")
@router.get("/")
async def health(request: Request) -> JSONResponse:
    state = app_state(request)
    if state.sole_model is not None:  # a family's model run alone (the audio-only server)
        status, body = state.sole_model.health(state)
    else:
        status, body = health_body(state)
        for part in state.health_parts:  # what the families add (the image worker)
            body.update(part(state))
    return JSONResponse(body, status_code=status)
