"""GET /props: the server's default generation settings and slot count (llama-server's shape)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from .state import AppState, app_state

router = APIRouter()

# llama-server reports u64::MAX when no seed is configured (a fresh random seed per request).
NO_SEED = 18446744073709551615


def props_body(state: AppState) -> dict[str, Any]:
    d = state.config.defaults
    return {
        "default_generation_settings": {
            "n_predict": d.n_predict,
            "temperature": d.temperature,
            "top_k": d.top_k,
            "top_p": d.top_p,
            "min_p": d.min_p,
            "repeat_penalty": d.repeat_penalty,
            "repeat_last_n": d.repeat_last_n,
            "seed": NO_SEED if d.seed is None else d.seed,
            "frequency_penalty": d.frequency_penalty,
            "presence_penalty": d.presence_penalty,
            "dry_multiplier": d.dry_multiplier,
            "dry_base": d.dry_base,
            "dry_allowed_length": d.dry_allowed_length,
            "dry_penalty_last_n": d.dry_penalty_last_n,
        },
        "total_slots": state.engine.max_batch_size,
        # llama-server's capability flags: image input on a vision-language model.
        "modalities": {"vision": _reads_images(state), "audio": False},
    }


def _reads_images(state: AppState) -> bool:
    model = state.engine.model
    return model is not None and model.vision is not None


@router.get("/props")
async def get_props(request: Request) -> JSONResponse:
    return JSONResponse(props_body(app_state(request)))
