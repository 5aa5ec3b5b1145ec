"""GET /props: the server's default generation settings and properties, in the shape
llama-server's README documents (``props_bodies.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ... import __version__
from ...api.state import AppState, app_state
from ...chat.reasoning import reasoning_markers
from ...chat.tool_calls import template_tool_format
from ...generation import SamplingParams
from .props_bodies import (
    ParamsView,
    default_generation_settings,
    params_body,
    template_caps,
)

router = APIRouter()


def server_params(state: AppState, **overrides: Any) -> dict[str, Any]:
    """The ``params`` a request that sets nothing runs with (``overrides``: a running
    request's own values)."""
    d = state.config.defaults
    model = state.engine.model
    fmt = template_tool_format(model) if model is not None else None
    sampling = SamplingParams(
        temperature=d.temperature, top_p=d.top_p, top_k=d.top_k, min_p=d.min_p, seed=d.seed,
        repetition_penalty=d.repeat_penalty, presence_penalty=d.presence_penalty,
        frequency_penalty=d.frequency_penalty, dry_multiplier=d.dry_multiplier,
        dry_base=d.dry_base, dry_allowed_length=d.dry_allowed_length,
        xtc_probability=d.xtc_probability, xtc_threshold=d.xtc_threshold)
    view = ParamsView(
        sampling=sampling, n_predict=d.n_predict, repeat_last_n=d.repeat_last_n,
        dry_penalty_last_n=d.dry_penalty_last_n or -1,
        speculative_n_max=state.engine.config.draft_max,
        chat_format=fmt.name if fmt is not None else "Content-only",
        reasoning_format="deepseek" if model is not None and reasoning_markers(model)
        else "none")
    return {**params_body(view), **overrides}


def speculative(state: AppState) -> bool:
    return bool(state.engine.config.draft_model or state.engine.config.prompt_lookup)


def props_body(state: AppState) -> dict[str, Any]:
    model = state.engine.model
    n_ctx = model.context_size if model is not None else state.config.ctx_size
    template = model.chat_template if model is not None else None
    tokenizer = getattr(model, "tokenizer", None)
    return {
        "default_generation_settings": default_generation_settings(
            n_ctx, speculative(state), server_params(state)),
        "total_slots": state.engine.max_batch_size,
        "model_alias": state.model_name,
        "model_path": state.config.model,
        # llama-server's capability flags: image input on a vision-language model.
        "modalities": {"vision": _reads_images(state), "video": False, "audio": False},
        "chat_template": template or "",
        "chat_template_caps": template_caps(template),
        "bos_token": getattr(tokenizer, "bos_token", None) or "",
        "eos_token": getattr(tokenizer, "eos_token", None) or "",
        "build_info": f"mlxcel-{__version__}",
        "is_sleeping": False,
    }


def _reads_images(state: AppState) -> bool:
    model = state.engine.model
    return model is not None and model.vision is not None


@router.get("/props")
async def get_props(request: Request) -> JSONResponse:
    return JSONResponse(props_body(app_state(request)))
