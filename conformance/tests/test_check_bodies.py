"""Tests for checks/responses_body.py and checks/anthropic_body.py on broken real bodies."""

from __future__ import annotations

import json
from typing import Any

import pytest
from real_stream_corpus import find, read, rejects

from mlxcel_conformance.checks.anthropic_body import check_anthropic_message_body
from mlxcel_conformance.checks.responses_body import check_response_body


def load(name: str) -> Any:
    return json.loads(read(find(name)))


RESPONSE_MUTATIONS = {
    "object": lambda b: b.update(object="chat.completion"),
    "created_at": lambda b: b.update(created_at="2025"),
    "status": lambda b: b.update(status="done"),
    "no-error-key": lambda b: b.pop("error"),
    "no-tools": lambda b: b.pop("tools"),
    "output": lambda b: b.update(output={}),
    "role": lambda b: b["output"][0].update(role="user"),
    "part": lambda b: b["output"][0]["content"][0].update(type="text"),
    "usage": lambda b: b["usage"].update(total_tokens=0),
}


@pytest.mark.parametrize("mutation", RESPONSE_MUTATIONS.values(), ids=RESPONSE_MUTATIONS.keys())
def test_broken_response_rejected(mutation: Any) -> None:
    body = load("openai-response-text.json")
    mutation(body)
    with rejects("response_body"):
        check_response_body(body)


def test_null_usage_accepted() -> None:
    body = load("openai-response-text.json")
    body["usage"] = None  # what the real API sends in response.created / response.failed
    check_response_body(body)


def test_function_call_arguments_must_be_json() -> None:
    body = load("openai-response-function-call.json")
    body["output"][0]["arguments"] = "{'location': 'Boston'}"
    with rejects("response_body"):
        check_response_body(body)


ANTHROPIC_MUTATIONS = {
    "type": lambda b: b.update(type="completion"),
    "role": lambda b: b.update(role="user"),
    "content": lambda b: b.update(content="text"),
    "block-text": lambda b: b["content"][0].update(text=None),
    "stop_reason": lambda b: b.update(stop_reason=None),
    "no-stop-sequence": lambda b: b.pop("stop_sequence"),
    "usage": lambda b: b["usage"].pop("output_tokens"),
}


@pytest.mark.parametrize("mutation", ANTHROPIC_MUTATIONS.values(), ids=ANTHROPIC_MUTATIONS.keys())
def test_broken_anthropic_message_rejected(mutation: Any) -> None:
    body = load("anthropic-message-text-max-tokens.json")
    mutation(body)
    with rejects("anthropic_message_body"):
        check_anthropic_message_body(body)


def test_tool_input_must_be_an_object() -> None:
    body = load("anthropic-message-tool-use.json")
    body["content"][0]["input"] = '{"a": 1}'
    with rejects("anthropic_message_body"):
        check_anthropic_message_body(body)
