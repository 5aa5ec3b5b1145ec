"""Round trips with the official anthropic SDK, strict response validation on: create,
messages.stream() + get_final_message(), count_tokens, a tool_use → tool_result turn."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import pytest

from mlxcel_conformance import pace
from mlxcel_conformance.checks import sources
from mlxcel_conformance.checks.anthropic_body import COUNT_TOKENS_DEFECT
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.target import Target
from mlxcel_conformance.tests.test_anthropic import count_agrees

GREEDY: dict[str, Any] = {"temperature": 0}  # not a typed argument in every SDK release
WEATHER_TOOL: anthropic.types.ToolParam = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris."}},
        "required": ["city"],
    },
}


@pytest.fixture(scope="module")
def sdk_model(model_name: str | None) -> str:
    return model_name or "default_model"


def _client(target: Target) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=target.base_url, api_key=target.api_key or "none",
                               max_retries=0, timeout=pace.current().request_timeout_s,
                               _strict_response_validation=True)


def _text(message: anthropic.types.Message) -> str:
    return "".join(b.text for b in message.content if b.type == "text")


@pytest.mark.conformance(family="sdk-anthropic", feature="sdk-anthropic.create_stream")
def test_sdk_anthropic_create_and_stream(target: Target, sdk_model: str) -> None:
    messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Count to five."}]
    with _client(target) as client:
        created = client.messages.create(model=sdk_model, max_tokens=32, messages=messages,
                                         system="Be terse.", extra_body=GREEDY)
        with client.messages.stream(model=sdk_model, max_tokens=32, messages=messages,
                                    system="Be terse.", extra_body=GREEDY) as stream:
            pieces = list(stream.text_stream)
            final = stream.get_final_message()
    if _text(created) != _text(final) or "".join(pieces) != _text(final):
        fail("sdk_anthropic", "create, streamed text and get_final_message disagree",
             created=created.model_dump(), final=final.model_dump(), pieces=pieces)
    if final.stop_reason != created.stop_reason or final.usage.output_tokens != \
            created.usage.output_tokens:
        fail("sdk_anthropic", "stop_reason/usage differ between stream and create",
             created=created.model_dump(), final=final.model_dump())


@pytest.mark.conformance(family="sdk-anthropic", feature="sdk-anthropic.count_tokens")
def test_sdk_anthropic_count_tokens(target: Target, sdk_model: str) -> None:
    messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": "Say hello."}]
    with _client(target) as client:
        counted = client.messages.count_tokens(model=sdk_model, messages=messages)
        created = client.messages.create(model=sdk_model, max_tokens=8, messages=messages,
                                         extra_body=GREEDY)
    usage = created.usage
    prompt = usage.input_tokens + (usage.cache_read_input_tokens or 0) + (
        usage.cache_creation_input_tokens or 0)
    if not count_agrees(counted.input_tokens, prompt):
        fail("sdk_anthropic", "count_tokens differs from the prompt tokens of usage "
             "(input + cache reads + cache writes)", source=sources.ANTHROPIC_COUNT_TOKENS,
             counted=counted.input_tokens, usage=created.usage.model_dump(),
             defect=COUNT_TOKENS_DEFECT)


# Thinking on as the template renders it by default (Anthropic's adaptive thinking): a Messages
# request without ``thinking`` renders a Qwen3-style turn without reasoning, a prompt the
# tool-call fixture was not trained on.
TOOL_TURN = {**GREEDY, "thinking": {"type": "adaptive"}}


@pytest.mark.conformance(family="sdk-anthropic", feature="sdk-anthropic.tool_turn")
def test_sdk_anthropic_tool_turn(target: Target, sdk_model: str) -> None:
    question: anthropic.types.MessageParam = {"role": "user",
                                              "content": "What is the weather in Paris?"}
    with _client(target) as client:
        with client.messages.stream(model=sdk_model, max_tokens=48, messages=[question],
                                    tools=[WEATHER_TOOL], extra_body=TOOL_TURN) as stream:
            first = stream.get_final_message()
        uses = [b for b in first.content if b.type == "tool_use"]
        if not uses:
            if target.self_started:
                fail("sdk_anthropic", "no tool_use from the tool-call fixture",
                     reply=first.model_dump())
            pytest.skip("the model answered without calling the tool")
        if first.stop_reason != "tool_use" or uses[0].name != "get_weather":
            fail("sdk_anthropic", "malformed tool_use turn", reply=first.model_dump())
        result: anthropic.types.MessageParam = {"role": "user", "content": [{
            "type": "tool_result", "tool_use_id": uses[0].id,
            "content": json.dumps({"temperature": 21, "sky": "sunny"})}]}
        second = client.messages.create(
            model=sdk_model, max_tokens=48, tools=[WEATHER_TOOL], extra_body=TOOL_TURN,
            messages=[question, {"role": "assistant", "content": first.content}, result])
    if second.stop_reason not in ("end_turn", "max_tokens") or not _text(second):
        fail("sdk_anthropic", "the turn after the tool result did not answer in text",
             reply=second.model_dump())
