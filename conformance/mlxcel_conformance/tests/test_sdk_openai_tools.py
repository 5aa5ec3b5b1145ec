"""The tool round trip with the official openai SDK, strict response validation on: the model
calls a tool, the client answers with a tool message, the model answers in words."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from mlxcel_conformance.checks.chat_semantics import (
    check_tool_call_declared,
    check_tool_markup_hidden,
)
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.sdk_clients import openai_client
from mlxcel_conformance.target import Target
from mlxcel_conformance.tests.test_chat_tools import ASK_WEATHER, WEATHER

# Typed loosely: the SDK's TypedDicts are for callers who build literals inline.
ASK: Any = ASK_WEATHER
TOOLS: Any = [WEATHER]
TOOL_RESULT = '{"temperature": 21, "sky": "sunny"}'


def _client(target: Target) -> openai.OpenAI:
    return openai_client(target)


def _streamed_call(client: openai.OpenAI, model: str) -> tuple[list[dict[str, Any]], str | None]:
    calls: dict[int, dict[str, Any]] = {}
    reason = None
    content = ""
    stream: Any = client.chat.completions.create(
        model=model, messages=ASK, tools=TOOLS, temperature=0, max_tokens=64,
        stream=True)
    for chunk in stream:
        for choice in chunk.choices:
            content += choice.delta.content or ""
            reason = choice.finish_reason or reason
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "type": "function",
                                                      "function": {"name": "", "arguments": ""}})
                call["id"] += delta.id or ""
                if delta.function is not None:
                    call["function"]["name"] += delta.function.name or ""
                    call["function"]["arguments"] += delta.function.arguments or ""
    check_tool_markup_hidden(content)
    return [calls[i] for i in sorted(calls)], reason


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.tools.round_trip")
@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_sdk_tool_round_trip(target: Target, model_name: str | None, stream: bool) -> None:
    model = model_name or "default_model"
    with _client(target) as client:
        if stream:
            calls, reason = _streamed_call(client, model)
        else:
            first = client.chat.completions.create(
                model=model, messages=ASK, tools=TOOLS, temperature=0,
                max_tokens=64)
            message = first.choices[0].message
            check_tool_markup_hidden(message.content)
            calls = [c.model_dump() for c in message.tool_calls or []]
            reason = first.choices[0].finish_reason
        if not calls:
            pytest.skip("the model answered without a tool call")
        if reason != "tool_calls":
            fail("tool_calls_finish_reason", f"finish_reason {reason!r} after a tool call")
        check_tool_call_declared(calls, [WEATHER])
        history: list[Any] = [
            *ASK_WEATHER,
            {"role": "assistant", "content": None, "tool_calls": calls},
            {"role": "tool", "tool_call_id": calls[0]["id"], "content": TOOL_RESULT},
        ]
        answer = client.chat.completions.create(
            model=model, messages=history, tools=TOOLS, temperature=0,
            max_tokens=48)
    final = answer.choices[0]
    check_tool_markup_hidden(final.message.content)
    if final.finish_reason == "tool_calls" or not final.message.content:
        fail("sdk_openai", "the answer after the tool result is not text",
             answer=answer.model_dump())
