"""Field parity with the real services: each object and event kind the real OpenAI and Anthropic
recordings carry, asked for once per family, JSON and stream. A profile that claims the current
shapes (the reference, the real APIs) is held to every key the real service sends today; any
other server to the public spec's minimum (``checks/field_parity``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlxcel_conformance.checks import field_parity as fp
from mlxcel_conformance.client import SuiteClient, expect_status
from mlxcel_conformance.flows import CHAT_PATH, chat_payload, response_of
from mlxcel_conformance.flows_typed import (
    ANTHROPIC_HEADERS,
    MESSAGES_PATH,
    RESPONSES_PATH,
    messages_payload,
    responses_payload,
)
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.sse import parse_sse


def _judge(profile: Profile, what: str, found: fp.Found) -> None:
    if profile.current_shapes:
        fp.check_field_parity_current(what, found)
    else:
        fp.check_field_parity(what, found)


def _json(client: SuiteClient, path: str, payload: dict[str, Any],
          headers: dict[str, str] | None = None) -> Any:
    response = client.post(path, payload, headers=headers or {})
    expect_status(response, 200)
    return response.json()


def _events(client: SuiteClient, path: str, payload: dict[str, Any]) -> list[Any]:
    result = client.stream(path, {**payload, "stream": True})
    expect_status(result, 200)
    return [json.loads(e.data) for e in parse_sse(result.text).events if e.data != "[DONE]"]


@pytest.mark.conformance(family="chat", feature="parity.chat.json")
def test_chat_completion_keys(client: SuiteClient, model_name: str | None,
                              profile: Profile) -> None:
    body = _json(client, CHAT_PATH, chat_payload(model_name, max_tokens=8))
    _judge(profile, "chat.completion", fp.chat_completion_objects(body))


@pytest.mark.conformance(family="chat", feature="parity.chat.stream")
def test_chat_chunk_keys(client: SuiteClient, model_name: str | None, profile: Profile) -> None:
    payload = chat_payload(model_name, max_tokens=8, stream_options={"include_usage": True})
    _judge(profile, "chat.completion.chunk", fp.chat_chunk_objects(
        _events(client, CHAT_PATH, payload)))


@pytest.mark.conformance(family="chat", feature="parity.chat.error")
def test_chat_error_keys(client: SuiteClient, model_name: str | None, profile: Profile) -> None:
    status, body = response_of(client.post(CHAT_PATH, {"model": model_name or "m"}))
    if status != 400:
        pytest.skip(f"HTTP {status} for a body without messages (judged by chat.errors)")
    _judge(profile, "error", fp.openai_error_objects(body))


@pytest.mark.conformance(family="responses", feature="parity.responses.json")
def test_response_keys(client: SuiteClient, model_name: str | None, profile: Profile) -> None:
    body = _json(client, RESPONSES_PATH, responses_payload(model_name, max_output_tokens=8))
    _judge(profile, "response", fp.response_objects(body))


@pytest.mark.conformance(family="responses", feature="parity.responses.stream")
def test_response_event_keys(client: SuiteClient, model_name: str | None,
                             profile: Profile) -> None:
    events = _events(client, RESPONSES_PATH, responses_payload(model_name, max_output_tokens=8))
    _judge(profile, "Responses stream", fp.responses_event_objects(events))


@pytest.mark.conformance(family="anthropic", feature="parity.anthropic.json")
def test_message_keys(client: SuiteClient, model_name: str | None, profile: Profile) -> None:
    body = _json(client, MESSAGES_PATH, messages_payload(model_name, max_tokens=8),
                 ANTHROPIC_HEADERS)
    _judge(profile, "message", fp.anthropic_message_objects(body))


@pytest.mark.conformance(family="anthropic", feature="parity.anthropic.stream")
def test_message_event_keys(client: SuiteClient, model_name: str | None,
                            profile: Profile) -> None:
    events = _events(client, MESSAGES_PATH, messages_payload(model_name, max_tokens=8))
    _judge(profile, "Messages stream", fp.anthropic_event_objects(events))


@pytest.mark.conformance(family="anthropic", feature="parity.anthropic.error")
def test_anthropic_error_keys(client: SuiteClient, model_name: str | None,
                              profile: Profile) -> None:
    payload = {"model": model_name or "m", "messages": [{"role": "user", "content": "hi"}]}
    status, body = response_of(client.post(MESSAGES_PATH, payload, headers=ANTHROPIC_HEADERS))
    if status != 400:
        pytest.skip(f"HTTP {status} without max_tokens (judged by anthropic.errors)")
    _judge(profile, "error", fp.anthropic_error_objects(body))
