"""GET /v1/cache/stats and POST /v1/cache/reset: the prompt cache's snapshot (always mounted;
a stable disabled payload when the cache is off)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ..engine.prompt_cache import disabled_stats
from ..memory import request_trim
from .state import app_state

router = APIRouter()


@router.get("/v1/cache/stats")
async def cache_stats(request: Request) -> JSONResponse:
    cache = app_state(request).engine.prompt_cache
    return JSONResponse(cache.stats() if cache is not None else disabled_stats())


@router.post("/v1/cache/reset")
async def cache_reset(request: Request) -> JSONResponse:
    cache = app_state(request).engine.prompt_cache
    request_trim()  # the emptied cache's memory goes back to the system
    return JSONResponse(cache.reset() if cache is not None else disabled_stats())
