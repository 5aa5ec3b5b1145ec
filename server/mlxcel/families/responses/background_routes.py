"""The route side of background responses: starting one (``POST /v1/responses`` with
``background: true``), streaming its events from a point (``GET /v1/responses/{id}?stream=true
&starting_after=N``) and what may be cancelled (``POST /v1/responses/{id}/cancel``).

As OpenAI documents it (https://platform.openai.com/docs/guides/background): background mode
needs ``store`` (``store: false`` is a 400); the create call answers at once with the response
``queued`` (or, with ``stream: true``, streams its events, and a client that leaves does not
stop it); only a background response can be cancelled, and cancelling one again returns it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ...api.offload import off_loop
from ...engine.handle import RequestHandle
from ...errors import InvalidRequestError
from ...sse import named_event, sse_response
from .compact_routes import Compacted
from .event_log import EventLog, EventsDropped
from .response_store import StoredResponse
from .store_service import ResponsesStores, log
from .stream import response_events
from .turn import PreparedTurn


def check_background(turn: PreparedTurn, stores: ResponsesStores) -> None:
    """Background mode keeps the response: ``store: false`` or a disabled store is a 400."""
    if turn.body.store is False:
        raise InvalidRequestError("Background mode requires store to be true; "
                                  "store: false cannot be used with background: true.",
                                  param="background")
    if not stores.responses.enabled:
        raise InvalidRequestError(
            "Background mode needs the response store, which is disabled on this server "
            "(--responses-store-max-entries 0).", param="background")


async def start_background(handle: RequestHandle, turn: PreparedTurn,
                           skeleton: dict[str, Any],
                           stores: ResponsesStores, compacted: Compacted | None) -> Response:
    """Store the response ``queued``, generate it in a task of its own, and answer with it
    (or with its event stream)."""
    response_id = skeleton["id"]
    await off_loop(stores.responses.put, response_id,
                   StoredResponse(skeleton, turn.history), True)
    stores.running.start(response_id, skeleton, handle.cancel)  # cancellable at once

    async def store_crash(exc: BaseException) -> None:
        failed = {**skeleton, "status": "failed",
                  "error": {"code": "server_error", "message": f"generation failed: {exc}"}}
        try:
            await off_loop(stores.responses.put, response_id,
                           StoredResponse(failed, turn.history))
        except Exception:
            log.exception("storing the failed background response %s failed", response_id)

    events = response_events(handle, turn, skeleton, stores, compacted)
    job = stores.background.start(response_id, events, handle.cancel, store_crash)
    if turn.body.stream:
        return sse_response(_follow(job.log, -1))
    return JSONResponse(skeleton)


def _flag(request: Request, name: str) -> bool:
    raw = request.query_params.get(name)
    if raw is None or raw.lower() in ("false", "0"):
        return False
    if raw.lower() in ("true", "1"):
        return True
    raise InvalidRequestError(f"{name} must be true or false.", param=name)


def _starting_after(request: Request) -> int:
    raw = request.query_params.get("starting_after")
    if raw is None:
        return -1
    if not (raw.isascii() and raw.isdigit()):
        raise InvalidRequestError("starting_after must be a non-negative integer.",
                                  param="starting_after")
    return int(raw)


def wants_stream(request: Request) -> bool:
    """``?stream=true`` on GET; a ``starting_after`` that is not a non-negative integer is a
    400 with or without it."""
    stream = _flag(request, "stream")
    _starting_after(request)
    return stream


def stream_from(request: Request, stores: ResponsesStores, body: dict[str, Any]) -> Response:
    """The events of background response ``body`` after ``starting_after``, then each new one
    until it ends."""
    if body.get("background") is not True:
        raise InvalidRequestError("Only a background response can be streamed from GET; this "
                                  "response was not created with background: true.",
                                  param="stream")
    event_log = stores.background.log_of(body["id"])
    if event_log is None:
        raise InvalidRequestError(
            "The events of this background response are no longer kept (they are kept while "
            "it is generated and for a while after); GET it without stream.", param="stream")
    after = _starting_after(request)
    try:
        event_log.check_available(after)
    except EventsDropped as exc:
        raise InvalidRequestError(f"starting_after {after}: {exc}.",
                                  param="starting_after") from None
    return sse_response(_follow(event_log, after))


async def _follow(event_log: EventLog, after: int) -> AsyncIterator[str]:
    try:
        async for text in event_log.follow(after):
            yield text
    except EventsDropped as exc:  # this reader fell behind the log's byte bound
        yield named_event("error", {"type": "error", "code": "events_dropped",
                                    "message": str(exc), "param": None,
                                    "sequence_number": exc.wanted})


def check_cancellable(body: dict[str, Any]) -> None:
    if body.get("background") is not True:
        raise InvalidRequestError("Only responses created with background: true can be "
                                  "cancelled.", param="response_id")
