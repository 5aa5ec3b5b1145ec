"""/v1/responses (and the aliases without /v1): create (in the foreground or the background,
``background_routes.py``), retrieve (as JSON, or a background response's events), delete,
cancel, count input tokens. Stores: ``store_service.stores_of`` (SQLite,
``response_store.py``; responses being generated in ``running.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ...api.engine_stream import collect
from ...api.media_offload import prepare_prompt
from ...api.offload import off_loop, parse_request
from ...api.priority import request_priority
from ...api.state import app_state
from ...chat.output import read_output
from ...chat.reasoning_tokens import thinking_tokens
from ...chat.turn import TurnSettings
from ...errors import InvalidRequestError, NotFoundError
from ...sse import sse_response
from .background_routes import (
    check_background,
    check_cancellable,
    start_background,
    stream_from,
    wants_stream,
)
from .compact_routes import apply_context_management, compaction_threshold
from .response_store import StoredResponse
from .responses_wire import (
    ResponsesRequest,
    finish_body,
    output_items,
    response_body,
)
from .store_service import ResponsesStores, store_lifespan, stores_of
from .stream import stream_response
from .turn import generation_request, prepare, remember

router = APIRouter(lifespan=store_lifespan)
PREFIXES = ("/v1", "")


async def create_response(request: Request) -> Response:
    state = app_state(request)
    stores = stores_of(request)
    body = await parse_request(request, ResponsesRequest)
    model = state.require_model()
    turn = await prepare_prompt(model, prepare, body, model, stores,
                                state.config.defaults.n_predict, TurnSettings.of(state.config))
    compacted = await apply_context_management(request, state, model, turn)
    gen = generation_request(turn, state.config.defaults, model.context_size)
    if body.background:
        check_background(turn, stores)
    handle = state.engine.submit(gen, request_priority(request))
    skeleton = response_body(gen.request_id, body, state.model_name,
                             status="queued" if body.background else "in_progress",
                             sampling=(gen.sampling.temperature, gen.sampling.top_p))
    if body.background:
        return await start_background(handle, turn, skeleton, stores, compacted)
    if body.stream:
        return sse_response(stream_response(handle, turn, skeleton, stores, compacted))
    done = await collect(request, handle)
    parsed = read_output(turn.output, done.text)
    reasoning_tokens = thinking_tokens(turn.output.new_parser(), done.deltas)
    output = output_items(parsed, done.finished)
    if compacted is not None:
        output.insert(0, compacted.item())
    final = finish_body(skeleton, done.finished, output, reasoning_tokens)
    await off_loop(remember, stores, turn, final)  # sizing what is stored walks it
    return JSONResponse(final)


def _enabled(stores: ResponsesStores) -> ResponsesStores:
    if not stores.responses.enabled:
        raise InvalidRequestError(
            "The response store is disabled on this server (--responses-store-max-entries 0).")
    return stores


def _not_found(response_id: str) -> NotFoundError:
    return NotFoundError(f"No response found with id '{response_id}'.")


async def _stored_body(request: Request, response_id: str) -> dict[str, Any]:
    """The response as generating now, else as stored."""
    stores = _enabled(stores_of(request))
    running = stores.running.get(response_id)
    if running is not None:
        return running
    stored: StoredResponse | None = await off_loop(stores.responses.get, response_id)
    if stored is None:
        raise _not_found(response_id)
    return stored.body


async def retrieve_response(request: Request, response_id: str) -> Response:
    stream = wants_stream(request)
    body = await _stored_body(request, response_id)
    if stream:
        return stream_from(request, stores_of(request), body)
    return JSONResponse(body)


async def delete_response(request: Request, response_id: str) -> Response:
    stores = _enabled(stores_of(request))
    running = stores.running.delete(response_id)  # deleting a running one stops it too
    stores.background.forget(response_id)
    if not await off_loop(stores.responses.delete, response_id) and not running:
        raise _not_found(response_id)
    return JSONResponse({"id": response_id, "object": "response.deleted", "deleted": True})


async def cancel_response(request: Request, response_id: str) -> Response:
    """Stop a queued or generating background response (it then reads ``cancelled``); one
    already ended is returned as it is."""
    stores = _enabled(stores_of(request))
    check_cancellable(await _stored_body(request, response_id))
    running = stores.running.cancel(response_id)
    return JSONResponse(running if running is not None else
                        await _stored_body(request, response_id))


async def count_input_tokens(request: Request) -> Response:
    state = app_state(request)
    body = await parse_request(request, ResponsesRequest)
    compaction_threshold(body)  # checked as on /v1/responses; the count is before compaction
    model = state.require_model()
    turn = await prepare_prompt(model, prepare, body, model, stores_of(request),
                                state.config.defaults.n_predict, TurnSettings.of(state.config))
    return JSONResponse({"object": "response.input_tokens", "input_tokens": len(turn.prompt)})


for _prefix in PREFIXES:
    router.add_api_route(f"{_prefix}/responses", create_response, methods=["POST"])
    router.add_api_route(f"{_prefix}/responses/input_tokens", count_input_tokens,
                         methods=["POST"])
    router.add_api_route(f"{_prefix}/responses/{{response_id}}", retrieve_response,
                         methods=["GET"])
    router.add_api_route(f"{_prefix}/responses/{{response_id}}", delete_response,
                         methods=["DELETE"])
    router.add_api_route(f"{_prefix}/responses/{{response_id}}/cancel", cancel_response,
                         methods=["POST"])
