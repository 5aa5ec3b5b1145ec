"""POST /v1/completions."""

from __future__ import annotations

from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ..engine.handle import RequestHandle
from ..engine.request import Finished
from ..protocol.body import parse_body
from ..protocol.completions import (
    CompletionChunkEncoder,
    CompletionRequest,
    completion_body,
    legacy_logprobs,
    to_generation_request,
)
from ..sse import data_event, sse_response
from .generation import collect, stream_events
from .state import FINGERPRINT, app_state

router = APIRouter()


@router.post("/v1/completions")
async def create_completion(request: Request) -> Response:
    state = app_state(request)
    body = parse_body(CompletionRequest, await request.body())
    model = state.require_model()
    gen = to_generation_request(body, model, state.config.defaults)
    handle = state.engine.submit(gen)
    echo = model.decode(list(gen.prompt_tokens)) if body.echo else ""
    if body.stream:
        return sse_response(_stream(handle, body, state.model_name, echo))
    done = await collect(request, handle)
    logprobs = legacy_logprobs(done.logprobs, len(echo)) if body.logprobs is not None else None
    payload = completion_body(
        gen.request_id, state.model_name, FINGERPRINT, echo + done.text, done.finished, logprobs
    )
    return JSONResponse(payload)


async def _stream(
    handle: RequestHandle, body: CompletionRequest, model_name: str, echo: str
) -> AsyncIterator[str]:
    encoder = CompletionChunkEncoder(handle.request.request_id, model_name, FINGERPRINT)
    if echo:
        yield data_event(encoder.text(echo))
    async for event in stream_events(handle):
        if not isinstance(event, Finished):
            yield data_event(encoder.delta(event, body.logprobs is not None))
        elif event.reason == "error":
            error = {"message": f"generation failed: {event.error}", "type": "server_error"}
            yield data_event({"error": {**error, "code": None}})
        else:
            yield data_event(encoder.finish(event))
            if body.wants_usage_chunk():
                yield data_event(encoder.usage(event))
    yield data_event("[DONE]")
