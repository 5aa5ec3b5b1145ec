"""GET /v1/models (and llama-server's /models): the one loaded model."""

from __future__ import annotations

import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .state import app_state

router = APIRouter()
_STARTED = int(time.time())


@router.get("/v1/models")
@router.get("/models")
async def list_models(request: Request) -> JSONResponse:
    name = app_state(request).model_name
    entry = {"id": name, "object": "model", "created": _STARTED, "owned_by": "user"}
    return JSONResponse({"object": "list", "data": [entry]})
