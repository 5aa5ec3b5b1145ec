"""POST /v1/chat/completions (and llama-server's alias /chat/completions), and the chat body's
input-token count llama-server serves at /v1/chat/completions/input_tokens."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ...api.engine_stream import collect, server_stop_error, stream_batches_with_progress
from ...api.media_offload import prepare_prompt
from ...api.offload import parse_request
from ...api.priority import request_priority
from ...api.state import FINGERPRINT, AppState, app_state
from ...chat.reasoning_tokens import ReasoningTokenCount
from ...chat.turn import TurnSettings
from ...engine.handle import RequestHandle
from ...generation import Finished, PromptProgress
from ...protocol.choices import check_choice_count, choice_requests
from ...protocol.logprobs import render_token_logprob
from ...protocol.mlx_lm_fields import check_model_fields
from ...protocol.timings import TimingsClock, request_timings
from ...sse import data_event, sse_response
from .chat_request import ChatCompletionRequest, ChatSetup, to_chat_setup
from .render import (
    ChatChunkEncoder,
    ChatOutput,
    completion_body,
    stream_logprobs,
)

router = APIRouter()
log = logging.getLogger("mlxcel.chat")


def _warn_if_forced_without_call(setup: ChatSetup, has_calls: bool) -> None:
    if setup.forced and not has_calls:
        log.warning("request %s: a forced tool_choice ended without a tool call",
                    setup.generation.request_id)


async def _chat_setup(request: Request
                      ) -> tuple[AppState, ChatCompletionRequest, ChatSetup, Any]:
    """(state, body, setup, LoRA adapter) of a chat body; the model fields checked first."""
    state = app_state(request)
    body = await parse_request(request, ChatCompletionRequest)
    _choices(state, body)
    adapter = check_model_fields(body, state.config.adapter_dir, state.config.draft_model)
    model = state.require_model()
    setup = await prepare_prompt(model, to_chat_setup, body, model, state.config.defaults,
                                 TurnSettings.of(state.config))
    return state, body, setup, adapter


@router.post("/v1/chat/completions/input_tokens")
@router.post("/chat/completions/input_tokens")
async def count_chat_input_tokens(request: Request) -> Response:
    """llama-server's token count of a chat body: the prompt the template renders for it."""
    _, _, setup, _ = await _chat_setup(request)
    return JSONResponse({"object": "response.input_tokens",
                         "input_tokens": len(setup.generation.prompt_tokens)})


@router.post("/v1/chat/completions")
@router.post("/chat/completions")
async def create_chat_completion(request: Request) -> Response:
    state, body, setup, adapter = await _chat_setup(request)
    changes: dict[str, Any] = {}
    if adapter is not None:
        changes["adapter"] = adapter
    if body.stream and body.return_progress:
        changes["report_progress"] = True  # llama-server's return_progress (its web UI)
    if changes:
        setup = dataclasses.replace(
            setup, generation=dataclasses.replace(setup.generation, **changes))
    # All choices are admitted together or none is (a 503 leaves nothing queued).
    handles = state.engine.submit_all(choice_requests(setup.generation, _choices(state, body)),
                                      request_priority(request))
    if body.stream:
        return sse_response(_stream(handles, body, setup, state.model_name))
    try:
        outputs = [await _output(request, handle, body, setup) for handle in handles]
    finally:
        for handle in handles:
            handle.cancel()  # the client left (or one choice failed): drop the rest
    payload = completion_body(setup.generation.request_id, state.model_name, FINGERPRINT,
                              outputs)
    timings = request_timings([output.finished for output in outputs],
                              bool(body.timings_per_token))
    if timings is not None:
        payload["timings"] = timings
    return JSONResponse(payload)


def _choices(state: AppState, body: ChatCompletionRequest) -> int:
    return check_choice_count(body.n, state.config.parallel)


async def _output(request: Request, handle: RequestHandle, body: ChatCompletionRequest,
                  setup: ChatSetup) -> ChatOutput:
    """One choice, collected and split; its reasoning tokens counted from its deltas."""
    done = await collect(request, handle)
    counter = ReasoningTokenCount(setup.new_parser())
    for delta in done.deltas:
        counter.feed(delta)
    parser = counter.parser
    parser.finish()
    _warn_if_forced_without_call(setup, bool(parser.calls))
    logprobs = [render_token_logprob(lp) for lp in done.logprobs] if body.wants_logprobs() else None
    return ChatOutput(parser.content, parser.reasoning, parser.calls, done.finished, logprobs,
                      counter.tokens)


@dataclass
class _Closed:
    """What the choices streamed so far leave for the usage chunk (or a failure's end)."""

    finished: list[Finished] = field(default_factory=list)
    reasoning_tokens: list[int] = field(default_factory=list)
    failed: bool = False
    created: int = 0  # the stream's one `created`, on every chunk


async def _stream(
    handles: list[RequestHandle], body: ChatCompletionRequest, setup: ChatSetup,
    model_name: str,
) -> AsyncIterator[str]:
    """The choices one after another (each generated in parallel all along), each chunk
    carrying its choice's ``index``; then the usage chunk when asked, and ``[DONE]``."""
    closed = _Closed(created=int(time.time()))
    try:
        for index, handle in enumerate(handles):
            async for text in _stream_choice(index, handle, body, setup, model_name, closed):
                yield text
            if closed.failed:
                return
        if body.wants_usage_chunk():
            encoder = ChatChunkEncoder(setup.generation.request_id, model_name, FINGERPRINT,
                                       created=closed.created)
            yield data_event(encoder.usage(closed.finished, closed.reasoning_tokens))
        if (stopped := server_stop_error(handles)) is not None:
            yield data_event(stopped)
        yield data_event("[DONE]")
    finally:
        for handle in handles:
            handle.cancel()


async def _stream_choice(
    index: int, handle: RequestHandle, body: ChatCompletionRequest, setup: ChatSetup,
    model_name: str, closed: _Closed,
) -> AsyncIterator[str]:
    encoder = ChatChunkEncoder(handle.request.request_id, model_name, FINGERPRINT, index,
                               closed.created)
    counter = ReasoningTokenCount(setup.new_parser())
    parser = counter.parser
    want_logprobs = body.wants_logprobs()
    # llama-server's timings_per_token: the timings so far on every chunk with tokens.
    clock = TimingsClock(len(handle.request.prompt_tokens)) \
        if body.timings_per_token else None
    started = time.perf_counter()
    yield data_event(encoder.role())
    async for batch in stream_batches_with_progress(handle):
        out: list[str] = []  # one socket write per batch of events
        for event in batch:
            if isinstance(event, PromptProgress):
                elapsed = (time.perf_counter() - started) * 1e3
                out.append(data_event(encoder.progress(event, elapsed)))
            elif isinstance(event, Finished):
                chunks = encoder.pieces(parser.finish())
                _warn_if_forced_without_call(setup, bool(parser.calls))
                chunks += _closing_chunks(encoder, event, bool(parser.calls), clock is not None)
                out.extend(data_event(chunk) for chunk in chunks)
                closed.finished.append(event)
                closed.reasoning_tokens.append(counter.tokens)
                if event.reason == "error":
                    closed.failed = True
                    out.append(data_event("[DONE]"))
            else:
                logprobs = stream_logprobs(event.logprobs, want_logprobs)
                chunks = encoder.pieces(counter.feed(event), logprobs)
                if clock is not None:
                    clock.feed(event)
                    for chunk in chunks:
                        chunk["timings"] = clock.so_far()
                out.extend(data_event(chunk) for chunk in chunks)
        if out:
            yield "".join(out)


def _closing_chunks(
    encoder: ChatChunkEncoder, finished: Finished, has_calls: bool, with_timings: bool = False,
) -> list[dict[str, Any]]:
    if finished.reason == "error":
        # openai-python raises APIError on a data payload with a top-level "error" key.
        message = f"generation failed: {finished.error}"
        return [{"error": {"message": message, "type": "server_error", "code": None}}]
    chunk = encoder.finish(finished, has_calls)
    timings = request_timings(finished, with_timings)
    if timings is not None:  # only the chunk carrying finish_reason
        chunk["timings"] = timings
    return [chunk]
