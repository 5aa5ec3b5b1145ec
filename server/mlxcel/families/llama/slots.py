"""GET /slots: each slot in llama-server's documented shape (``id``, ``id_task``, ``n_ctx``,
``speculative``, ``is_processing``, ``params``, ``next_token``), plus mlxcel's own ``state``,
``model`` and ``context_size``; then one entry per request waiting in the prefill queue
(``state: "queued"``, an mlxcel extension). ``?fail_on_no_slot=1`` answers 503 when every slot
is busy, as llama-server documents."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ...api.state import AppState, app_state
from ...engine.slots import ActiveSequence
from ...errors import RouteNotFound, ServerBusy
from ...generation import GenerationRequest
from .props import server_params, speculative
from .props_bodies import slot_entry

router = APIRouter()


def _request_params(state: AppState, gen: GenerationRequest) -> dict[str, Any]:
    """A running request's own values over the server's ``params``."""
    s = gen.sampling
    own: dict[str, Any] = {
        "n_predict": gen.max_tokens, "max_tokens": gen.max_tokens,
        "temperature": s.temperature, "top_k": s.top_k, "top_p": s.top_p, "min_p": s.min_p,
        "repeat_last_n": s.repetition_context_size, "stop": list(gen.stop),
        "ignore_eos": gen.ignore_eos, "n_probs": gen.top_logprobs,
        "dry_multiplier": s.dry_multiplier, "dry_base": s.dry_base,
        "dry_allowed_length": s.dry_allowed_length}
    if s.seed is not None:
        own["seed"] = s.seed
    return server_params(state, **own)


def _entry(state: AppState, index: int, seq: ActiveSequence | None, n_ctx: int,
           kind: str) -> dict[str, Any]:
    if seq is None:
        entry = slot_entry(index, n_ctx, speculative(state), server_params(state),
                           processing=False)
    else:
        gen = seq.handle.request
        entry = slot_entry(
            index, n_ctx, speculative(state), _request_params(state, gen), processing=True,
            id_task=seq.uid, n_decoded=len(seq.generated),
            n_remain=max(seq.max_tokens - len(seq.generated), 0))
    return {**entry, "state": kind, "model": state.model_name, "context_size": n_ctx}


def slots_body(state: AppState) -> list[dict[str, Any]]:
    engine = state.engine
    n_ctx = state.require_model().context_size
    body = [_entry(state, i, seq, n_ctx, "idle" if seq is None else "decoding")
            for i, seq in enumerate(list(engine.slots))]
    queued = sum(1 for _ in engine.queue.snapshot())
    body += [_entry(state, len(body) + i, None, n_ctx, "queued") for i in range(queued)]
    return body


@router.get("/slots")
async def get_slots(request: Request) -> JSONResponse:
    state = app_state(request)
    if not state.config.slots:
        raise RouteNotFound(f"Invalid URL ({request.method} {request.url.path})")
    body = slots_body(state)
    if request.query_params.get("fail_on_no_slot") not in (None, "", "0", "false") and \
            all(s["is_processing"] for s in body if s["state"] != "queued"):
        raise ServerBusy("no slot available")
    return JSONResponse(body)
