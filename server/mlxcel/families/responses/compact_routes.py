"""Compaction: POST /v1/responses/compact (and /responses/compact), and the compaction a
``context_management`` request runs before generating.

One non-streaming generation writes the summary; nothing is stored. Failures that would not
shrink the history are 400 ``context_length_exceeded`` and change nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import Field

from ...api.engine_stream import collect
from ...api.offload import off_loop, parse_request
from ...api.priority import request_priority
from ...api.state import AppState, app_state
from ...chat.output import output_setup, read_output
from ...chat.template import render_chat_prompt
from ...chat.tool_choice import plan_tools
from ...engine.loaded_model import LoadedModel
from ...errors import ContextLengthExceeded, InvalidRequestError
from ...protocol.types import Int, Omittable
from .compaction import (
    KEEP_TOKENS_CAP,
    MAX_SUMMARY_TOKENS,
    SUMMARY_INSTRUCTIONS,
    Capsule,
    choose_split,
    encode_capsule,
    messages_to_items,
    summary_message,
    summary_request,
    transcript,
)
from .input import input_messages
from .responses_wire import ResponsesRequest, chat_tool_choice, chat_tools, new_id, usage_body
from .turn import PreparedTurn

router = APIRouter()


class CompactRequest(ResponsesRequest):
    keep_tokens: Omittable[Int] = Field(default=None, gt=0)
    max_output_tokens: Omittable[Int] = Field(default=None, ge=1, le=MAX_SUMMARY_TOKENS)


@dataclass
class Compacted:
    kept: list[dict[str, Any]]  # system and developer messages
    summary: str
    retained: list[dict[str, Any]]
    tokens_before: int
    tokens_after: int
    summary_prompt_tokens: int
    summary_tokens: int

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.kept + [summary_message(self.summary)] + self.retained

    def item(self) -> dict[str, Any]:
        # Without item ids, so the capsule depends only on the history (and goldens can pin it).
        retained = [{k: v for k, v in item.items() if k != "id"}
                    for item in messages_to_items(self.retained)]
        capsule = Capsule(self.summary, retained)
        return {"id": new_id("cmp"), "type": "compaction",
                "encrypted_content": encode_capsule(capsule)}


def _too_long(message: str) -> ContextLengthExceeded:
    return ContextLengthExceeded(message, param="input")


@dataclass(frozen=True)
class _Plan:
    kept: list[dict[str, Any]]
    rest: list[dict[str, Any]]
    split: int
    before: int
    prompt: list[int]


def _plan(model: LoadedModel, history: list[dict[str, Any]], system: list[dict[str, Any]],
          tools: list[dict[str, Any]] | None, keep_tokens: int | None) -> _Plan:
    """Where to cut the history and the summary prompt (template renders: off the loop)."""
    def count(messages: list[dict[str, Any]]) -> int:
        return len(render_chat_prompt(model, system + messages, tools=tools))

    context = model.context_size
    before = count(history)
    if before > context:
        raise _too_long(f"The history ({before} tokens) is longer than the context window "
                        f"({context}); it cannot be summarized.")
    kept = [m for m in history if m["role"] == "system"]
    rest = [m for m in history if m["role"] != "system"]
    keep = keep_tokens or min(context // 16, KEEP_TOKENS_CAP)
    split = choose_split(rest, keep, count)
    if not split:
        raise _too_long("Nothing precedes the retained turns: compaction would not shorten "
                        "the input.")
    prompt = render_chat_prompt(model, [
        {"role": "system", "content": SUMMARY_INSTRUCTIONS},
        {"role": "user", "content": transcript(kept + rest[:split])},
    ])
    if len(prompt) >= context:
        raise _too_long(f"The summary prompt ({len(prompt)} tokens) does not fit the context "
                        f"window ({context}).")
    return _Plan(kept, rest, split, before, prompt)


async def compact_history(
    request: Request, state: AppState, model: LoadedModel, history: list[dict[str, Any]],
    *, system: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
    keep_tokens: int | None = None, summary_tokens: int | None = None,
) -> Compacted:
    plan = await off_loop(_plan, model, history, system, tools, keep_tokens)
    context, prompt = model.context_size, plan.prompt
    gen = summary_request(prompt, summary_tokens, context, new_id("cmp"))
    done = await collect(request, state.engine.submit(gen, request_priority(request)))
    parsed = read_output(output_setup(model, "", None), done.text)
    reasoning, content = parsed.reasoning, parsed.content
    summary = (content or reasoning or "").strip()
    result = Compacted(plan.kept, summary, plan.rest[plan.split:], plan.before, 0,
                       done.finished.prompt_tokens, done.finished.completion_tokens)
    result.tokens_after = len(await off_loop(render_chat_prompt, model,
                                             system + result.messages, tools=tools))
    if result.tokens_after >= plan.before:
        raise _too_long(f"The compacted input ({result.tokens_after} tokens) is not shorter "
                        f"than the input ({plan.before} tokens).")
    return result


def _check_compact_request(body: CompactRequest) -> None:
    for field in ("stream", "previous_response_id", "conversation"):
        if getattr(body, field):
            raise InvalidRequestError(f"{field} is not supported by /v1/responses/compact.",
                                      param=field)
    if body.input is None:
        raise InvalidRequestError("Missing required parameter: 'input'.", param="input")


async def compact(request: Request) -> Response:
    state = app_state(request)
    body = await parse_request(request, CompactRequest)
    _check_compact_request(body)
    model = state.require_model()
    system = [{"role": "system", "content": body.instructions}] if body.instructions else []
    assert body.input is not None
    result = await compact_history(
        request, state, model, input_messages(body.input), system=system,
        tools=plan_tools(chat_tools(body), chat_tool_choice(body)).tools,
        keep_tokens=body.keep_tokens,
        summary_tokens=body.max_output_tokens)
    output = messages_to_items(result.kept) + [result.item()] + \
        messages_to_items(result.retained)
    return JSONResponse({
        "id": new_id("cmp"),
        "object": "response.compaction",
        "created_at": int(time.time()),
        "model": state.model_name,
        "output": output,
        "usage": usage_body(result.summary_prompt_tokens, result.summary_tokens, 0),
    })


for _prefix in ("/v1", ""):
    router.add_api_route(f"{_prefix}/responses/compact", compact, methods=["POST"])


def compaction_threshold(body: ResponsesRequest) -> int | None:
    """The ``compact_threshold`` of a ``context_management`` request (None without one)."""
    if body.context_management is None:
        return None
    entries = body.context_management
    ok = len(entries) == 1 and entries[0].get("type") == "compaction"
    threshold = entries[0].get("compact_threshold") if ok else None
    if isinstance(threshold, float) and threshold.is_integer():
        threshold = int(threshold)
    if not ok or not isinstance(threshold, int) or isinstance(threshold, bool) or \
            not 1 <= threshold <= 100_000_000:
        raise InvalidRequestError(
            "context_management must be [{'type': 'compaction', 'compact_threshold': N}] "
            "with N from 1 to 100000000.", param="context_management")
    return threshold


async def apply_context_management(
    request: Request, state: AppState, model: LoadedModel, turn: PreparedTurn
) -> Compacted | None:
    """Compact ``turn`` in place when its prompt reaches the threshold or leaves no room for
    output; return what was done (None when nothing was)."""
    threshold = compaction_threshold(turn.body)
    if threshold is None:
        return None
    size = len(turn.prompt)
    if size < threshold and size < model.context_size:
        return None
    system = [{"role": "system", "content": turn.body.instructions}] \
        if turn.body.instructions else []
    result = await compact_history(request, state, model, turn.history, system=system,
                                   tools=turn.tools)
    turn.history = result.messages
    await off_loop(turn.rebuild, model, system)
    return result
