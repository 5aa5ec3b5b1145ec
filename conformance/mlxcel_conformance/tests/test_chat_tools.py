"""Tool calls on /v1/chat/completions: parsed calls, streamed call deltas, tool_choice rules.

The conversations are the fixture model's scripted ones (`fixtures/scripted.json`): on the
fixture, greedy decoding really emits a call. On another model a test that needs a call the
model did not make is skipped, never passed; leaked markup always fails.
"""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.chat_semantics import (
    check_tool_call_declared,
    check_tool_calls_finish_reason,
    check_tool_markup_hidden,
    judge_forced_call,
)
from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.openai_chat import check_tool_call_deltas
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.checks.sse_checks import check_done_terminator
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import CHAT_PATH, response_of, with_model
from mlxcel_conformance.readers import last_finish_reason, read_chat, read_stream

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris."}},
            "required": ["city"],
        },
    },
}
TIME = {
    "type": "function",
    "function": {
        "name": "get_time",
        "description": "Get the current local time in a timezone.",
        "parameters": {
            "type": "object",
            "properties": {
                "timezone": {
                    "type": "string",
                    "description": "An IANA timezone name, e.g. Asia/Tokyo.",
                }
            },
            "required": ["timezone"],
        },
    },
}
ASK_WEATHER = [{"role": "user", "content": "What is the weather in Paris?"}]


def tool_payload(model: str | None, messages: list[dict[str, Any]] = ASK_WEATHER,
                 tools: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"messages": messages, "tools": tools or [WEATHER],
                               "max_tokens": 64, "temperature": 0}
    payload.update(fields)
    return with_model(model, payload)


def _calls_or_skip(message: dict[str, Any]) -> list[dict[str, Any]]:
    check_tool_markup_hidden(message.get("content"))
    calls: list[dict[str, Any]] = message.get("tool_calls") or []
    if not calls:
        pytest.skip(f"the model answered without a tool call: {message.get('content')!r}")
    return calls


@pytest.mark.conformance(family="chat", feature="chat.tools.call")
def test_tool_call_body(client: SuiteClient, model_name: str | None) -> None:
    body = read_chat(client, tool_payload(model_name))
    choice = body["choices"][0]
    calls = _calls_or_skip(choice["message"])
    check_tool_calls_finish_reason(choice.get("finish_reason"), calls)
    check_tool_call_declared(calls, [WEATHER])
    if choice["message"].get("content") not in (None, ""):
        fail("tool_calls_finish_reason", "a pure tool-call answer has content",
             answer=choice["message"])


# A tool call streamed with and without `logprobs`: two features, so a server that refuses
# logprobs together with tools still shows whether it streams tool calls.
@pytest.mark.conformance(family="chat", feature="chat.tools.stream")
@pytest.mark.parametrize("logprobs", [False, pytest.param(True, id="logprobs", marks=(
    pytest.mark.conformance(family="chat", feature="chat.tools.stream.logprobs")))],
    ids=["plain", "logprobs"])
def test_tool_call_stream(client: SuiteClient, model_name: str | None, logprobs: bool) -> None:
    payload = tool_payload(model_name, logprobs=logprobs) if logprobs else tool_payload(model_name)
    stream = read_stream(client, payload)
    check_tool_markup_hidden(stream.content)
    calls = check_tool_call_deltas([c for c in stream.chunks if c.get("choices")]).get(0, [])
    if not calls:
        pytest.skip(f"the model answered without a tool call: {stream.content!r}")
    check_tool_calls_finish_reason(last_finish_reason(stream), calls)
    check_tool_call_declared(calls, [WEATHER])
    body = read_chat(client, tool_payload(model_name))
    final = body["choices"][0]["message"].get("tool_calls") or []
    streamed = [(c["function"]["name"], c["function"]["arguments"]) for c in calls]
    whole = [(c["function"]["name"], c["function"]["arguments"]) for c in final]
    if streamed != whole:
        fail("tool_call_deltas", "streamed calls differ from the non-streamed ones",
             streamed=streamed, non_streamed=whole)


@pytest.mark.conformance(family="chat", feature="chat.tools.not_sent")
def test_no_parsing_without_tools(client: SuiteClient, model_name: str | None) -> None:
    payload = tool_payload(model_name)
    payload.pop("tools")
    body = read_chat(client, payload)
    choice = body["choices"][0]
    if choice["message"].get("tool_calls") or choice.get("finish_reason") == "tool_calls":
        fail("tool_calls_finish_reason", "tool calls parsed although no tools were sent",
             choice=choice)


@pytest.mark.conformance(family="chat", feature="chat.tools.choice_none")
def test_tool_choice_none(client: SuiteClient, model_name: str | None) -> None:
    body = read_chat(client, tool_payload(model_name, tool_choice="none"))
    choice = body["choices"][0]
    if choice["message"].get("tool_calls") or choice.get("finish_reason") == "tool_calls":
        fail("tool_calls_finish_reason", "tool_choice none still produced a tool call",
             ignored=True, ignored_field="tool_choice", choice=choice)


FORCED_FINISH = ("tool_calls", "stop")
FORCED = {
    "required": ("required", [WEATHER], None),
    "named": ({"type": "function", "function": {"name": "get_time"}}, [WEATHER, TIME],
              "get_time"),
}


@pytest.mark.conformance(family="chat", feature="chat.tools.choice_forced")
@pytest.mark.parametrize("case", sorted(FORCED))
@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
@pytest.mark.parametrize("prompt", ["Say hello.", "Tell me a story."])
def test_forced_tool_choice(client: SuiteClient, model_name: str | None, case: str,
                            stream: bool, prompt: str) -> None:
    choice, tools, forced = FORCED[case]
    # A conversation with no reason to call a tool: only the forced choice makes one, and it
    # must fit max_tokens (a free string argument must not run to finish_reason "length").
    payload = tool_payload(model_name, [{"role": "user", "content": prompt}], tools,
                           tool_choice=choice)
    if stream:
        result = read_stream(client, payload)
        content = result.content
        calls = check_tool_call_deltas([c for c in result.chunks if c.get("choices")]).get(0, [])
        reason = last_finish_reason(result)
    else:
        body = read_chat(client, payload)
        content = body["choices"][0]["message"].get("content")
        calls = body["choices"][0]["message"].get("tool_calls") or []
        reason = body["choices"][0].get("finish_reason")
    judge_forced_call(case, calls, reason, content)
    if reason not in FORCED_FINISH:
        # OpenAI ends a named forced call with "stop" and a required one with "tool_calls"
        # (vllm-project/vllm#25054 shows both); either says the call is complete.
        fail("tool_calls_finish_reason", f"a forced tool call ended with {reason!r}",
             calls=calls)
    check_tool_call_declared(calls, tools, forced)


BAD_CHOICES: dict[str, tuple[Any, list[dict[str, Any]] | None]] = {
    "required_without_tools": ("required", None),
    "required_empty_tools": ("required", []),
    "named_undeclared": ({"type": "function", "function": {"name": "nope"}}, [WEATHER]),
    "named_empty_name": ({"type": "function", "function": {"name": ""}}, [WEATHER]),
    "named_wrong_type": ({"type": "tool", "function": {"name": "get_weather"}}, [WEATHER]),
    "unknown_string": ("sometimes", [WEATHER]),
}


@pytest.mark.conformance(family="chat", feature="chat.tools.choice_errors")
@pytest.mark.parametrize("case", sorted(BAD_CHOICES))
def test_tool_choice_errors(client: SuiteClient, model_name: str | None, case: str) -> None:
    choice, tools = BAD_CHOICES[case]
    payload: dict[str, Any] = with_model(model_name, {
        "messages": ASK_WEATHER, "max_tokens": 4, "tool_choice": choice})
    if tools is not None:
        payload["tools"] = tools
    status, body = response_of(client.post(CHAT_PATH, payload))
    check_error_body_openai(body, status=status, expected=400, case=case,
        source="OpenAI API reference, Chat Completions tool_choice; Error codes: 400")


@pytest.mark.conformance(family="chat", feature="chat.tools.choice_with_response_format",
                         extension="refusals")
def test_forced_choice_with_response_format(client: SuiteClient,
                                            model_name: str | None) -> None:
    """The reference refuses a forced call together with a constraining response_format (one
    grammar at a time); OpenAI's API accepts the pair."""
    payload: dict[str, Any] = with_model(model_name, {
        "messages": ASK_WEATHER, "max_tokens": 4, "tool_choice": "required", "tools": [WEATHER],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "x", "schema": {"type": "object"}}}})
    status, body = response_of(client.post(CHAT_PATH, payload))
    check_error_body_openai(body, status=status, expected=400)


@pytest.mark.conformance(family="chat", feature="chat.tools.cut_by_max_tokens")
@pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])
def test_tool_call_cut_by_max_tokens(client: SuiteClient, model_name: str | None,
                                     stream: bool) -> None:
    """max_tokens ending inside a call: a complete response with finish_reason length (mlx-lm
    drops the connection here), never tool_calls with a half call. What a half call's text
    becomes (hidden, or left in content) no public document says: it is not judged."""
    payload = tool_payload(model_name, max_tokens=6)
    if stream:
        result = read_stream(client, payload)
        check_done_terminator(result.result.text)  # the cut stream still ends properly
        reasons = result.finish_reasons()
    else:
        body = read_chat(client, payload)
        reasons = [body["choices"][0].get("finish_reason")]
    if reasons != ["length"]:
        fail("tool_calls_finish_reason", f"a call cut at 6 tokens ended with {reasons}",
             finish_reasons=reasons)
