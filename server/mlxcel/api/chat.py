"""POST /v1/chat/completions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ..engine.handle import RequestHandle
from ..engine.request import Finished
from ..protocol.body import parse_body
from ..protocol.chat import (
    ChatChunkEncoder,
    ChatCompletionRequest,
    completion_body,
    to_generation_request,
)
from ..protocol.logprobs import render_token_logprob
from ..sse import data_event, sse_response
from .generation import collect, stream_events
from .priority import request_priority
from .state import FINGERPRINT, app_state

router = APIRouter()


@router.post("/v1/chat/completions")
async def create_chat_completion(request: Request) -> Response:
    state = app_state(request)
    body = parse_body(ChatCompletionRequest, await request.body())
    model = state.require_model()
    gen = to_generation_request(body, model, state.config.defaults)
    handle = state.engine.submit(gen, request_priority(request))
    if body.stream:
        return sse_response(_stream(handle, body, state.model_name))
    done = await collect(request, handle)
    logprobs = [render_token_logprob(lp) for lp in done.logprobs] if body.logprobs else None
    payload = completion_body(
        gen.request_id, state.model_name, FINGERPRINT, done.text, done.finished, logprobs
    )
    return JSONResponse(payload)


async def _stream(
    handle: RequestHandle, body: ChatCompletionRequest, model_name: str
) -> AsyncIterator[str]:
    encoder = ChatChunkEncoder(handle.request.request_id, model_name, FINGERPRINT)
    yield data_event(encoder.role())
    async for event in stream_events(handle):
        if isinstance(event, Finished):
            for chunk in _closing_chunks(encoder, event, body.wants_usage_chunk()):
                yield data_event(chunk)
        else:
            yield data_event(encoder.delta(event, bool(body.logprobs)))
    yield data_event("[DONE]")


def _closing_chunks(
    encoder: ChatChunkEncoder, finished: Finished, with_usage: bool
) -> list[dict[str, Any]]:
    if finished.reason == "error":
        # openai-python raises APIError on a data payload with a top-level "error" key.
        message = f"generation failed: {finished.error}"
        return [{"error": {"message": message, "type": "server_error", "code": None}}]
    chunks = [encoder.finish(finished)]
    if with_usage:
        chunks.append(encoder.usage(finished))
    return chunks
