"""/v1/messages and /v1/messages/count_tokens (and the aliases without /v1): the Anthropic
Messages API. Errors on these paths are rendered in Anthropic's shape by ``handlers``."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from ..chat.forcing import constrain, instructed_messages
from ..chat.template import RenderedPrompt, render_chat, render_chat_prompt
from ..chat.thinking_budget import budget_factory
from ..engine.model import LoadedModel
from ..engine.request import GenerationRequest
from ..protocol.anthropic import (
    CountTokensRequest,
    MessagesRequest,
    chat_tools,
    forced_tool_choice,
    message_shell,
    new_message_id,
    new_tool_use_id,
    stop_reason,
    template_messages,
    tool_input,
    usage_of,
)
from ..protocol.generated import ParsedOutput, parse_output
from ..sse import sse_response
from .generation import collect
from .messages_stream import stream_message
from .offload import off_loop, parse_request
from .priority import request_priority
from .state import app_state

router = APIRouter()


def content_blocks(parsed: ParsedOutput, with_thinking: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if with_thinking and parsed.reasoning is not None:
        blocks.append({"type": "thinking", "thinking": parsed.reasoning, "signature": ""})
    if parsed.content or not parsed.calls:
        blocks.append({"type": "text", "text": parsed.content, "citations": None})
    for call in parsed.calls:
        blocks.append({"type": "tool_use", "id": new_tool_use_id(), "name": call.name,
                       "input": tool_input(call.arguments)})
    return blocks


def _prepare(model: LoadedModel, body: MessagesRequest
             ) -> tuple[list[dict[str, Any]] | None, tuple[Any, ...], RenderedPrompt]:
    """Tools, constraints (a forced call's grammar) and the rendered prompt: off the loop."""
    tools = chat_tools(body)
    messages, constraints = constrain(model, template_messages(body), tools,
                                      forced_tool_choice(body), None, body.max_tokens)
    return tools, constraints, render_chat(model, messages, tools=tools)


def _count(model: LoadedModel, body: CountTokensRequest) -> int:
    tools = chat_tools(body)
    # The forced-choice instruction /v1/messages would add is part of the real prompt.
    messages = instructed_messages(template_messages(body), tools, forced_tool_choice(body))
    return len(render_chat_prompt(model, messages, tools=tools))


async def create_message(request: Request) -> Response:
    # The body's size is bounded for every route by api/guard.py (413 request_too_large).
    state = app_state(request)
    body = await parse_request(request, MessagesRequest)
    model = state.require_model()
    tools, constraints, rendered = await off_loop(_prepare, model, body)
    prompt = rendered.tokens
    opens_reasoning = model.decode(prompt[-4:]).endswith("<think>\n")
    budget = budget_factory(model, body.thinking_budget(), opens_reasoning)
    if budget is not None:
        constraints = (budget, *constraints)
    gen = GenerationRequest(
        prompt_tokens=tuple(prompt),
        max_tokens=body.max_tokens,
        sampling=body.sampling(state.config.defaults),
        stop=body.stop_strings(),
        logits_processor_factories=constraints,
        request_id=new_message_id(),
        vision=rendered.vision,
    )
    handle = state.engine.submit(gen, request_priority(request))
    shell = message_shell(gen.request_id, state.model_name, len(prompt))
    if body.stream:
        return sse_response(stream_message(handle, shell, model, tools, opens_reasoning,
                                           body.thinking_enabled))
    done = await collect(request, handle)
    parsed = parse_output(model, done.text, tools, opens_reasoning)
    reason, sequence = stop_reason(done.finished, bool(parsed.calls))
    message = {**shell, "content": content_blocks(parsed, body.thinking_enabled),
               "stop_reason": reason, "stop_sequence": sequence,
               "usage": usage_of(done.finished.prompt_tokens, done.finished.completion_tokens)}
    return JSONResponse(message)


async def count_tokens(request: Request) -> Response:
    state = app_state(request)
    body = await parse_request(request, CountTokensRequest)
    model = state.require_model()
    return JSONResponse({"input_tokens": await off_loop(_count, model, body)})


for _prefix in ("/v1", ""):
    router.add_api_route(f"{_prefix}/messages", create_message, methods=["POST"])
    router.add_api_route(f"{_prefix}/messages/count_tokens", count_tokens, methods=["POST"])
