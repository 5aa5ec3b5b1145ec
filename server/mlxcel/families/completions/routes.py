"""POST /v1/completions (one choice per prompt, in prompt order)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ...api.engine_stream import collect, server_stop_error, stream_events
from ...api.offload import off_loop, parse_request
from ...api.priority import request_priority
from ...api.state import FINGERPRINT, app_state
from ...engine.handle import RequestHandle
from ...engine.loaded_model import LoadedModel
from ...generation import Finished
from ...protocol.mlx_lm_fields import check_model_fields
from ...protocol.timings import TimingsClock, request_timings
from ...sse import data_event, sse_response
from .completions_request import (
    CompletionChunkEncoder,
    CompletionRequest,
    completion_body,
    legacy_logprobs,
    to_generation_requests,
)

router = APIRouter()


@router.post("/v1/completions")
async def create_completion(request: Request) -> Response:
    state = app_state(request)
    body = await parse_request(request, CompletionRequest)
    adapter = check_model_fields(body, state.config.adapter_dir, state.config.draft_model)
    model = state.require_model()
    gens = await off_loop(to_generation_requests, body, model, state.config.defaults,
                          state.config.parallel)
    if adapter is not None:
        gens = [dataclasses.replace(gen, adapter=adapter) for gen in gens]
    echoes = await off_loop(lambda: [_echo(body, model, list(g.prompt_tokens)) for g in gens])
    # Streaming /v1/completions is not counted in /metrics (the reference's semantics). All
    # prompts are admitted together or none is (a 503 leaves nothing queued).
    handles = state.engine.submit_all(gens, request_priority(request),
                                      count_in_metrics=not body.stream)
    if body.stream:
        return sse_response(_stream(handles, body, state.model_name, echoes))
    choices: list[tuple[str, Finished, dict[str, Any] | None]] = []
    try:
        for handle, echo in zip(handles, echoes, strict=True):
            done = await collect(request, handle)
            want = body.logprobs is not None
            logprobs = legacy_logprobs(done.logprobs, len(echo)) if want else None
            choices.append((echo + done.text, done.finished, logprobs))
    finally:
        for handle in handles:
            handle.cancel()  # the client left (or one prompt failed): drop the rest
    payload = completion_body(gens[0].request_id, state.model_name, FINGERPRINT, choices,
                              body.n or 1)
    timings = request_timings([finished for _, finished, _ in choices],
                              bool(body.timings_per_token))
    if timings is not None:
        payload["timings"] = timings
    return JSONResponse(payload)


def _echo(body: CompletionRequest, model: LoadedModel, tokens: list[int]) -> str:
    return model.decode(tokens) if body.echo else ""


async def _stream(
    handles: list[RequestHandle], body: CompletionRequest, model_name: str, echoes: list[str]
) -> AsyncIterator[str]:
    encoder = CompletionChunkEncoder(handles[0].request.request_id, model_name, FINGERPRINT)
    finished: list[Finished] = []
    per_token = bool(body.timings_per_token)  # llama-server's timings_per_token
    try:
        for index, (handle, echo) in enumerate(zip(handles, echoes, strict=True)):
            if echo:
                yield data_event(encoder.text(index, echo))
            clock = TimingsClock(len(handle.request.prompt_tokens))
            async for event in stream_events(handle):
                if not isinstance(event, Finished):
                    chunk = encoder.delta(index, event, body.logprobs is not None)
                    if per_token:
                        clock.feed(event)
                        chunk["timings"] = clock.so_far()
                    yield data_event(chunk)
                elif event.reason == "error":
                    error = {"message": f"generation failed: {event.error}",
                             "type": "server_error", "code": None}
                    yield data_event({"error": error})
                    yield data_event("[DONE]")
                    return
                else:
                    finished.append(event)
                    chunk = encoder.finish(index, event)
                    timings = request_timings(event, per_token)
                    if timings is not None:  # only the chunk carrying finish_reason
                        chunk["timings"] = timings
                    yield data_event(chunk)
        if body.wants_usage_chunk():
            yield data_event(encoder.usage(finished, body.n or 1))
        if (stopped := server_stop_error(handles)) is not None:
            yield data_event(stopped)
        yield data_event("[DONE]")
    finally:
        for handle in handles:
            handle.cancel()
