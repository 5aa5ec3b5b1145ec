"""POST /v1/chat/completions (and llama-server's alias /chat/completions), and the chat body's
input-token count llama-server serves at /v1/chat/completions/input_tokens."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ...api.generation import collect, stream_batches_with_progress
from ...api.media_offload import prepare_prompt
from ...api.offload import parse_request
from ...api.priority import request_priority
from ...api.state import FINGERPRINT, AppState, app_state
from ...chat.template import apply_template_override
from ...engine.handle import RequestHandle
from ...generation import Finished, PromptProgress
from ...protocol.logprobs import render_token_logprob
from ...protocol.mlx_lm_fields import check_model_fields
from ...protocol.timings import TimingsClock, request_timings
from ...sse import data_event, sse_response
from .models import ChatCompletionRequest, ChatSetup, to_chat_setup
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


def _server_chat_settings(state: AppState) -> tuple[str | None, dict[str, Any]]:
    return state.config.chat_template, dict(state.config.chat_template_kwargs)


async def _chat_setup(request: Request
                      ) -> tuple[AppState, ChatCompletionRequest, ChatSetup, Any]:
    """(state, body, setup, LoRA adapter) of a chat body; the model fields checked first."""
    state = app_state(request)
    body = await parse_request(request, ChatCompletionRequest)
    adapter = check_model_fields(body, state.config.adapter_dir, state.config.draft_model)
    model = state.require_model()
    template, server_kwargs = _server_chat_settings(state)
    apply_template_override(model, template)
    setup = await prepare_prompt(model, to_chat_setup, body, model, state.config.defaults,
                                 server_kwargs, state.config.prefill_assistant)
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
    if adapter is not None:
        setup = dataclasses.replace(
            setup, generation=dataclasses.replace(setup.generation, adapter=adapter))
    if body.stream and body.return_progress:
        # llama-server's return_progress (its web UI asks for it on this route).
        setup = dataclasses.replace(
            setup, generation=dataclasses.replace(setup.generation, report_progress=True))
    handle = state.engine.submit(setup.generation, request_priority(request))
    count_tokens = _token_counter(state.require_model())
    if body.stream:
        return sse_response(_stream(handle, body, setup, state.model_name, count_tokens))
    done = await collect(request, handle)
    parser = setup.new_parser()
    parser.feed(done.text)
    parser.finish()
    _warn_if_forced_without_call(setup, bool(parser.calls))
    logprobs = [render_token_logprob(lp) for lp in done.logprobs] if body.wants_logprobs() else None
    output = ChatOutput(parser.content, parser.reasoning, parser.calls, done.finished, logprobs,
                        count_tokens(parser.reasoning))
    payload = completion_body(setup.generation.request_id, state.model_name, FINGERPRINT, output)
    timings = request_timings(done.finished, bool(body.timings_per_token))
    if timings is not None:
        payload["timings"] = timings
    return JSONResponse(payload)


def _token_counter(model: Any) -> Callable[[str | None], int]:
    """Tokens in the reasoning text, for usage.completion_tokens_details.reasoning_tokens."""
    return lambda text: len(model.encode(text)) if text else 0


async def _stream(
    handle: RequestHandle, body: ChatCompletionRequest, setup: ChatSetup, model_name: str,
    count_tokens: Callable[[str | None], int],
) -> AsyncIterator[str]:
    encoder = ChatChunkEncoder(handle.request.request_id, model_name, FINGERPRINT)
    parser = setup.new_parser()
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
                chunks += _closing_chunks(encoder, event, body.wants_usage_chunk(),
                                          bool(parser.calls), count_tokens(parser.reasoning),
                                          clock is not None)
                out.extend(data_event(chunk) for chunk in chunks)
                out.append(data_event("[DONE]"))
            else:
                logprobs = stream_logprobs(event.logprobs, want_logprobs)
                pieces = parser.feed(event.text)
                chunks = encoder.pieces(pieces, logprobs)
                if clock is not None:
                    clock.feed(event)
                    for chunk in chunks:
                        chunk["timings"] = clock.so_far()
                out.extend(data_event(chunk) for chunk in chunks)
        if out:
            yield "".join(out)


def _closing_chunks(
    encoder: ChatChunkEncoder, finished: Finished, with_usage: bool, has_calls: bool,
    reasoning_tokens: int = 0, with_timings: bool = False,
) -> list[dict[str, Any]]:
    if finished.reason == "error":
        # openai-python raises APIError on a data payload with a top-level "error" key.
        message = f"generation failed: {finished.error}"
        return [{"error": {"message": message, "type": "server_error", "code": None}}]
    chunks = [encoder.finish(finished, has_calls)]
    timings = request_timings(finished, with_timings)
    if timings is not None:  # only the chunk carrying finish_reason
        chunks[0]["timings"] = timings
    if with_usage:
        chunks.append(encoder.usage(finished, reasoning_tokens))
    return chunks
