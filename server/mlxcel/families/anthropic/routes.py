"""/v1/messages and /v1/messages/count_tokens (and the aliases without /v1): the Anthropic
Messages API. Errors on these paths are rendered in Anthropic's shape by ``handlers``."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ...api.engine_stream import collect
from ...api.media_offload import prepare_prompt
from ...api.offload import parse_request
from ...api.priority import request_priority
from ...api.state import app_state
from ...chat.output import read_output
from ...chat.reasoning_tokens import thinking_tokens
from ...chat.turn import TurnSettings, render_turn
from ...sse import sse_response
from .errors import ANTHROPIC_ERROR_SHAPE
from .messages_wire import (
    CountTokensRequest,
    MessagesRequest,
    message_body,
    message_shell,
    stop_reason,
    turn_request,
    usage_of,
)
from .stream import stream_message
from .turn import content_blocks, to_messages_turn

router = APIRouter()
error_shape = ANTHROPIC_ERROR_SHAPE


async def create_message(request: Request) -> Response:
    # The body's size is bounded for every route by api/guard.py (413 request_too_large).
    state = app_state(request)
    body = await parse_request(request, MessagesRequest)
    model = state.require_model()
    turn = await prepare_prompt(model, to_messages_turn, body, model, state.config.defaults,
                                TurnSettings.of(state.config))
    gen = turn.generation
    handle = state.engine.submit(gen, request_priority(request))
    shell = message_shell(gen.request_id, state.model_name, len(gen.prompt_tokens))
    if body.stream:
        return sse_response(stream_message(handle, shell, turn))
    done = await collect(request, handle)
    parsed = read_output(turn.output, done.text)
    reason, sequence = stop_reason(done.finished, bool(parsed.calls))
    usage = usage_of(done.finished.prompt_tokens, done.finished.completion_tokens,
                     thinking_tokens(turn.output.new_parser(), done.deltas))
    message = message_body(shell, content_blocks(parsed, turn.with_thinking), reason, sequence,
                           usage)
    return JSONResponse(message)


async def count_tokens(request: Request) -> Response:
    state = app_state(request)
    body = await parse_request(request, CountTokensRequest)
    model = state.require_model()
    # The prompt /v1/messages renders (the forced choice's instruction included).
    turn = turn_request(body, state.config.defaults.n_predict)
    prompt = await prepare_prompt(model, render_turn, turn, model, TurnSettings.of(state.config))
    return JSONResponse({"input_tokens": len(prompt.tokens)})


for _prefix in ("/v1", ""):
    router.add_api_route(f"{_prefix}/messages", create_message, methods=["POST"])
    router.add_api_route(f"{_prefix}/messages/count_tokens", count_tokens, methods=["POST"])
