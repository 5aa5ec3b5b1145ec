"""GET /health (also /v1/health, as llama-server) and GET /: liveness, loading state, batch
and observability counters."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..families.audio.audio_service import AudioService, audio_service
from ..families.images.image_service import ImageService, image_service
from .state import AppState, app_state

router = APIRouter()


def audio_health_body(state: AppState, service: AudioService | None) -> tuple[int, dict[str, Any]]:
    """The audio-only server: ready once its worker has loaded the Whisper or Kokoro model."""
    if service is None:
        return 503, {"status": "loading model"}
    audio = {"queue_depth": service.queue_depth, "max_queue": service.max_queue,
             "timeout_s": service.timeout_s}
    return 200, {"status": "ok", "model": state.model_name, "audio": audio}


def image_health(service: ImageService) -> dict[str, Any]:
    """The image worker that runs beside the text model (``--image-model``)."""
    return {"model": service.model.name, "queue_depth": service.queue_depth,
            "max_queue": service.max_queue, "timeout_s": service.timeout_s}


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
    if state.config.audio_model:
        status, body = audio_health_body(state, audio_service(request))
    else:
        status, body = health_body(state)
        images = image_service(request)
        if images is not None:
            body["images"] = image_health(images)
    return JSONResponse(body, status_code=status)
