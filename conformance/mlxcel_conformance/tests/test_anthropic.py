"""POST /v1/messages and /v1/messages/count_tokens: bodies, named event streams, stop reasons,
tools, and errors in Anthropic's shape on these routes only.

`anthropic.json.body` and `anthropic.stream.event_order` judge the Message object and the event
stream; the behaviour features read their answers with `readers` and judge only their
behaviour."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance import pace
from mlxcel_conformance.checks import sources
from mlxcel_conformance.checks.anthropic_body import COUNT_TOKENS_DEFECT
from mlxcel_conformance.checks.contract_edges import skip_documented
from mlxcel_conformance.checks.engine_checks import STOP_FIELD, STOP_NOT_APPLIED
from mlxcel_conformance.checks.errors_checks import (
    check_error_body_anthropic,
)
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.defects import stream_adds_reasoning
from mlxcel_conformance.flows import check_schema, response_of, with_model
from mlxcel_conformance.flows_typed import (
    ANTHROPIC_HEADERS,
    MESSAGES_PATH,
    message_text,
    messages_json,
    messages_payload,
    messages_stream,
)
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.readers import read_message, read_message_stream
from mlxcel_conformance.target import Target

WEATHER_TOOL = {
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "input_schema": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris."}},
        "required": ["city"],
    },
}


@pytest.mark.conformance(family="anthropic", feature="anthropic.json.body")
@pytest.mark.parametrize("prefix", ["/v1", pytest.param("", marks=pytest.mark.conformance(
    family="anthropic", feature="anthropic.json.body.alias", extension="aliases"))])
def test_messages_json_body(client: SuiteClient, model_name: str | None, prefix: str) -> None:
    body = messages_json(client, messages_payload(model_name), f"{prefix}/messages")
    if body["stop_reason"] not in ("end_turn", "max_tokens"):
        fail("anthropic_message_body", "a plain reply ends with end_turn or max_tokens",
             body=body)


@pytest.mark.conformance(family="anthropic", feature="anthropic.stream.event_order")
def test_messages_stream_matches_body(client: SuiteClient, model_name: str | None) -> None:
    payload = messages_payload(model_name, "Count to five.", system="Be terse.")
    stream = messages_stream(client, payload)
    body = read_message(client, payload)
    streamed = stream.message
    if message_text(streamed) != message_text(body) or \
            streamed.get("stop_reason") != body.get("stop_reason") or \
            _output_tokens(streamed) != _output_tokens(body):
        fail("anthropic_event_order", "the greedy stream differs from the body",
             streamed=streamed, non_streamed=body)


@pytest.mark.conformance(family="anthropic", feature="anthropic.stop_reasons")
def test_messages_stop_reasons(client: SuiteClient, model_name: str | None) -> None:
    short = read_message(client, messages_payload(model_name, "Tell me a story.", max_tokens=3))
    if short.get("stop_reason") != "max_tokens" or _output_tokens(short) != 3:
        fail("anthropic_message_body", "max_tokens=3 must stop with max_tokens after 3 tokens",
             body=short)
    text = message_text(read_message(client, messages_payload(model_name, "Tell me a story.",
                                                              max_tokens=24)))
    words = [w for w in text.split(" ") if len(w) > 3]
    if not words:
        pytest.skip("the model's reply has no word to stop on")
    stop = words[len(words) // 2]
    stopped = read_message(client, messages_payload(model_name, "Tell me a story.",
                                                    max_tokens=24, stop_sequences=[stop]))
    if stopped.get("stop_reason") != "stop_sequence" or stopped.get("stop_sequence") != stop or \
            stop in message_text(stopped):
        if message_text(stopped) == text:  # as if no stop sequence had been sent
            fail("anthropic_message_body", "the stop sequence did not stop the answer: it is "
                 "the answer without stop_sequences", ignored=True, ignored_field=STOP_FIELD,
                 body=stopped, stop=stop, defect=STOP_NOT_APPLIED)
        fail("anthropic_message_body", "a matched stop sequence must end the message, "
             "be named in stop_sequence and not appear in the text", body=stopped, stop=stop)


@pytest.mark.conformance(family="anthropic", feature="anthropic.thinking")
def test_messages_thinking_stream(client: SuiteClient, model_name: str | None) -> None:
    payload = messages_payload(model_name, "What is 2 plus 2? Think first.", max_tokens=48,
                               thinking={"type": "enabled", "budget_tokens": 1024})
    stream = read_message_stream(client, payload)
    body = read_message(client, payload)
    kinds = [block.get("type") for block in stream.message["content"]]
    plain = [block.get("type") for block in body["content"]]
    if kinds != plain:
        fail("anthropic_event_order", "streamed and non-streamed blocks differ",
             streamed=stream.message["content"], non_streamed=body["content"],
             defect=stream_adds_reasoning(kinds, plain))
    if "thinking" in kinds and kinds.index("thinking") != 0:
        fail("anthropic_event_order", "a thinking block must come first", kinds=kinds)


@pytest.mark.conformance(family="anthropic", feature="anthropic.tools")
def test_messages_tools(client: SuiteClient, model_name: str | None) -> None:
    payload = messages_payload(model_name, "What is the weather in Paris?",
                               tools=[WEATHER_TOOL], max_tokens=48)
    body = read_message(client, payload)
    stream = read_message_stream(client, payload)
    uses = [b for b in body["content"] if b.get("type") == "tool_use"]
    streamed = [b for b in stream.message["content"] if b.get("type") == "tool_use"]
    if [(u.get("name"), u.get("input")) for u in uses] != \
            [(u.get("name"), u.get("input")) for u in streamed]:
        fail("anthropic_event_order", "streamed and non-streamed tool_use blocks differ",
             streamed=streamed, non_streamed=uses)
    if uses and body.get("stop_reason") != "tool_use":
        fail("anthropic_message_body", "a tool_use block needs stop_reason tool_use", body=body)
    # Each tool_choice is only to be accepted: a plain answer's length is enough for that.
    accepted = {**payload, "max_tokens": pace.answer_tokens(48)}
    for choice in ({"type": "none"}, {"type": "any"}, {"type": "tool", "name": "get_weather"}):
        read_message(client, {**accepted, "tool_choice": choice})


REQUEST_FIELDS: dict[str, dict[str, Any]] = {
    "metadata_service_tier": {"metadata": {"user_id": "suite"}, "service_tier": "auto"},
    "server_tool": {"tools": [WEATHER_TOOL, {"type": "web_search_20250305",
                                             "name": "web_search"}]},
}


@pytest.mark.conformance(family="anthropic", feature="anthropic.request_fields")
@pytest.mark.parametrize("case", ["metadata_service_tier", pytest.param(
    "server_tool", marks=pytest.mark.conformance(
        family="anthropic", feature="anthropic.request_fields.server_tool"))])
def test_messages_request_fields_accepted(client: SuiteClient, model_name: str | None,
                                          case: str) -> None:
    """Fields of a valid Messages request (Anthropic API reference, Messages: metadata,
    service_tier; a server tool declared beside a function tool) are accepted, not a 4xx. Each
    its own feature, apart from anthropic.tools: a server that refuses them still shows how it
    does function tools."""
    read_message(client, messages_payload(model_name, "What is the weather in Paris?",
                                          max_tokens=pace.answer_tokens(48),
                                          **REQUEST_FIELDS[case]))


# tool_choice values whose prompt differs: a forced choice (any / tool) adds an instruction.
COUNTED_TOOL_CHOICES: dict[str, dict[str, Any] | None] = {
    "no_tools": None,
    "auto": {"type": "auto"},
    "any": {"type": "any"},
    "tool": {"type": "tool", "name": "get_weather"},
    "none": {"type": "none"},
}


@pytest.mark.conformance(family="anthropic", feature="anthropic.count_tokens")
@pytest.mark.parametrize("choice", sorted(COUNTED_TOOL_CHOICES))
def test_count_tokens(client: SuiteClient, model_name: str | None, choice: str) -> None:
    _check_count_tokens(client, model_name, choice, "/v1")


@pytest.mark.conformance(family="anthropic", feature="anthropic.count_tokens.alias",
                         extension="aliases")
def test_count_tokens_without_v1(client: SuiteClient, model_name: str | None) -> None:
    """The reference also serves ``/messages/count_tokens`` (its own alias)."""
    _check_count_tokens(client, model_name, "no_tools", "")


def prompt_tokens_of(usage: dict[str, Any]) -> int:
    """The prompt as a message's usage counts it: Anthropic splits it into uncached input,
    cache reads and cache writes (Messages API reference, usage)."""
    return sum(int(usage.get(key) or 0) for key in (
        "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def _check_count_tokens(client: SuiteClient, model_name: str | None, choice: str,
                        prefix: str) -> None:
    # Only the prompt is counted: one output token is enough to read the message's usage.
    payload = messages_payload(model_name, system=[{"type": "text", "text": "Be terse."}],
                               max_tokens=1)
    if choice != "no_tools":
        payload["tools"] = [WEATHER_TOOL]
        payload["tool_choice"] = COUNTED_TOOL_CHOICES[choice]
    counted = client.post(f"{prefix}/messages/count_tokens",
                          {k: v for k, v in payload.items() if k != "max_tokens"},
                          headers=ANTHROPIC_HEADERS)
    if counted.status_code == 404:
        pytest.skip("UNSUPPORTED: the server does not serve /v1/messages/count_tokens")
    expect_status(counted, 200)
    count = json_body(counted)
    check_schema("POST", "/v1/messages/count_tokens", 200, count)
    body = read_message(client, payload)
    if not count_agrees(count["input_tokens"], prompt_tokens_of(body.get("usage") or {})):
        fail("anthropic_message_body", "count_tokens differs from the message's prompt tokens "
             "(input + cache reads + cache writes) by more than an estimate may",
             source=sources.ANTHROPIC_COUNT_TOKENS, counted=count, usage=body["usage"],
             defect=COUNT_TOKENS_DEFECT)


def _output_tokens(message: dict[str, Any]) -> int | None:
    value = (message.get("usage") or {}).get("output_tokens")
    return value if isinstance(value, int) else None


def count_agrees(counted: int, used: int) -> bool:
    """Anthropic documents count_tokens as an estimate that "may differ by a small amount"
    from the message's input: within 2 tokens or 10%."""
    return abs(counted - used) <= max(2, used // 10)


USER = [{"role": "user", "content": "Say hello."}]
IMAGE = {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                     "data": "iVBORw0KGgo="}}
BAD_BODIES: dict[str, dict[str, Any]] = {
    "max_tokens_missing": {"messages": USER},
    "max_tokens_zero": {"messages": USER, "max_tokens": 0},
    "messages_missing": {"max_tokens": 8},
    "messages_empty": {"messages": [], "max_tokens": 8},
    "role_system": {"messages": [{"role": "system", "content": "x"}], "max_tokens": 8},
    "temperature_high": {"messages": USER, "max_tokens": 8, "temperature": 1.5},
    "tool_choice_unknown_tool": {"messages": USER, "max_tokens": 8, "tools": [WEATHER_TOOL],
                                 "tool_choice": {"type": "tool", "name": "nope"}},
}


@pytest.mark.conformance(family="anthropic", feature="anthropic.errors.invalid_body",
                         destructive=True)
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_messages_invalid_body(client: SuiteClient, model_name: str | None, case: str,
                               profile: Profile) -> None:
    skip_documented(profile, f"anthropic.{case}")
    status, body = response_of(client.post(MESSAGES_PATH, with_model(model_name,
                                                                     BAD_BODIES[case])))
    check_error_body_anthropic(body, status=status, expected=400, case=case,
        source="Anthropic API reference, Messages request body; Errors: 400 invalid_request_error")


@pytest.mark.conformance(family="anthropic", feature="anthropic.errors.image_text_only",
                         extension="refusals")
def test_messages_image_on_a_text_only_model(client: SuiteClient,
                                             model_name: str | None) -> None:
    """The reference refuses an image block when its model reads no images."""
    payload = {"messages": [{"role": "user", "content": [IMAGE]}], "max_tokens": 8}
    status, body = response_of(client.post(MESSAGES_PATH, with_model(model_name, payload)))
    if status == 200:
        pytest.skip("the server's model reads images")
    check_error_body_anthropic(body, status=status, expected=400)


@pytest.mark.conformance(family="anthropic", feature="anthropic.errors.malformed_json.alias",
                         extension="aliases")
def test_messages_alias_malformed_json(client: SuiteClient, model_name: str | None) -> None:
    test_messages_malformed_json(client, model_name, "/messages")


COUNT_PATH = "/v1/messages/count_tokens"


@pytest.mark.conformance(family="anthropic", feature="anthropic.errors.malformed_json",
                         destructive=True)
@pytest.mark.parametrize("path", [MESSAGES_PATH, pytest.param(COUNT_PATH, marks=(
    pytest.mark.conformance(family="anthropic", feature="anthropic.count_tokens.malformed_json",
                            destructive=True)))])
def test_messages_malformed_json(client: SuiteClient, model_name: str | None, path: str) -> None:
    """Anthropic's error shape on its routes (the chat route keeps OpenAI's: chat.errors)."""
    if path == COUNT_PATH and client.post(COUNT_PATH, messages_payload(model_name),
                                          headers=ANTHROPIC_HEADERS).status_code == 404:
        pytest.skip("UNSUPPORTED: the server does not serve /v1/messages/count_tokens")
    status, body = response_of(client.post_raw(path, b"{not json"))
    check_error_body_anthropic(body, status=status, expected=400, case="malformed JSON",
                               source="Anthropic API reference, Errors: 400 "
                               "invalid_request_error (the format of the request)")


# Anthropic's 32 MB ceiling is enforced by its hosted edge (API reference, Errors: 413
# request_too_large), not by the Messages protocol: a local server owes it to no one, so it is
# the reference's own promise (the `edge_limits` extension).
@pytest.mark.conformance(family="anthropic", feature="anthropic.errors.request_too_large",
                         extension="edge_limits", destructive=True)
def test_messages_over_32_mib_is_413(client: SuiteClient, model_name: str | None) -> None:
    # Anthropic's documented ceiling is 32 MB per request: a larger body is 413 request_too_large.
    text = "a" * (33 * 1024 * 1024)
    payload = with_model(model_name, {"max_tokens": 4,
                                      "messages": [{"role": "user", "content": text}]})
    # Reading 33 MiB may take a slow server longer than the suite's usual request timeout;
    # the verdict is on the status it answers, not on its speed.
    status, body = response_of(client.post(MESSAGES_PATH, payload, timeout=180))
    error = check_error_body_anthropic(body, status=status, expected=413,
                                       source="Anthropic API reference, Errors: 413 "
                                       "request_too_large (over 32 MB)")
    if error.get("type") != "request_too_large":
        fail("error_body_anthropic", f"413 with type {error.get('type')!r}", body=body)


@pytest.mark.conformance(family="anthropic", feature="anthropic.errors.auth", destructive=True)
def test_messages_auth(target: Target, client: SuiteClient, model_name: str | None) -> None:
    if not target.api_key:
        pytest.skip("UNSUPPORTED: the target was given no --api-key, so auth cannot be checked")
    payload = messages_payload(model_name)
    status, body = response_of(client.http.post(MESSAGES_PATH, json=payload,
                                                headers={"Authorization": ""}))
    check_error_body_anthropic(body, status=status, expected=401)
    keyed = client.http.post(MESSAGES_PATH, json=payload,
                             headers={"Authorization": "", "x-api-key": target.api_key})
    expect_status(keyed, 200)
