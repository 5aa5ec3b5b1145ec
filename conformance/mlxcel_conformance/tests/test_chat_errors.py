"""Bad input to /v1/chat/completions: documented 400s in the OpenAI shape, never a 500 or a
hang, and the server keeps serving afterwards."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import CHAT_PATH, chat_json, chat_payload, response_of, with_model

USER = [{"role": "user", "content": "Say hello."}]

BAD_BODIES: dict[str, Any] = {
    "messages_missing": {"max_tokens": 4},
    "messages_not_array": {"messages": "hello", "max_tokens": 4},
    "messages_empty": {"messages": [], "max_tokens": 4},
    "role_unknown": {"messages": [{"role": "wizard", "content": "hi"}], "max_tokens": 4},
    "max_tokens_negative": {"messages": USER, "max_tokens": -5},
    "max_tokens_string": {"messages": USER, "max_tokens": "many"},
    "temperature_string": {"messages": USER, "temperature": "hot", "max_tokens": 4},
    "stop_number": {"messages": USER, "stop": 42, "max_tokens": 4},
    "stream_options_string": {"messages": USER, "stream": True, "stream_options": "yes"},
}


@pytest.mark.conformance(family="chat", feature="chat.errors.invalid_body", destructive=True)
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_chat_invalid_body_is_400(client: SuiteClient, model_name: str | None, case: str) -> None:
    payload = with_model(model_name, BAD_BODIES[case])
    status, body = response_of(client.post(CHAT_PATH, payload))
    check_error_body_openai(body, status=status, expected=400, case=case,
                            source="OpenAI API reference, Chat Completions request body; "
                            "Error codes: 400 invalid_request_error")


@pytest.mark.conformance(family="chat", feature="chat.errors.malformed_json", destructive=True)
@pytest.mark.parametrize("raw", [b"{not json", b"[1, 2, 3]", b""], ids=["broken", "array", "empty"])
def test_chat_malformed_json_is_400(client: SuiteClient, raw: bytes) -> None:
    status, body = response_of(client.post_raw(CHAT_PATH, raw))
    check_error_body_openai(body, status=status, expected=400)


@pytest.mark.conformance(family="chat", feature="chat.errors.loop_survives", destructive=True)
def test_chat_serves_after_bad_input(client: SuiteClient, model_name: str | None) -> None:
    for case in sorted(BAD_BODIES):
        client.post(CHAT_PATH, with_model(model_name, BAD_BODIES[case]))
    chat_json(client, chat_payload(model_name))
