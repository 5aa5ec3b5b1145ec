"""Request flows of the typed-event families (OpenAI Responses, Anthropic Messages): send,
run every check a response of that kind must pass, hand back the parsed result.

These are the shape flows of the shape features (``*.json.body``, ``*.stream.event_order``,
``parity.*``); a behaviour feature reads its answer with ``readers``. A stream's final object is
checked as a body before its events are held to the schema, so an object's missing key fails
the stream feature with the same check and message as the body feature (one defect)."""

from __future__ import annotations

from typing import Any

from . import pace
from .checks.anthropic_body import check_anthropic_message_body
from .checks.anthropic_events import AnthropicStream, check_anthropic_stream
from .checks.responses_body import check_response_body, check_responses_usage_terminal
from .checks.responses_events import ResponsesStream, check_responses_stream
from .client import SuiteClient, expect_status, json_body
from .flows import check_schema, check_schema_events, check_sse_content_type, with_model
from .sse import parse_sse

RESPONSES_PATH = "/v1/responses"
MESSAGES_PATH = "/v1/messages"
# Anthropic's SDKs send the key as x-api-key and a version header.
ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}


def responses_payload(model: str | None, input: Any = "Say hello.", **fields: Any) -> dict:
    payload: dict[str, Any] = {"input": input, "max_output_tokens": pace.answer_tokens(32),
                               "temperature": 0}
    payload.update(fields)
    return with_model(model, payload)


def messages_payload(model: str | None, content: Any = "Say hello.", **fields: Any) -> dict:
    payload: dict[str, Any] = {
        "messages": [{"role": "user", "content": content}],
        "max_tokens": pace.answer_tokens(32),
        "temperature": 0,
    }
    payload.update(fields)
    return with_model(model, payload)


def responses_json(client: SuiteClient, payload: dict[str, Any],
                   path: str = RESPONSES_PATH) -> dict[str, Any]:
    response = client.post(path, payload)
    expect_status(response, 200)
    body: dict[str, Any] = json_body(response)
    check_response_body(body)
    check_schema("POST", RESPONSES_PATH, 200, body)
    return body


def responses_stream(client: SuiteClient, payload: dict[str, Any]) -> ResponsesStream:
    result = client.stream(RESPONSES_PATH, {**payload, "stream": True})
    expect_status(result, 200)
    check_sse_content_type(result)
    stream = check_responses_stream(parse_sse(result.text).events)
    if stream.response:
        check_response_body(stream.response)
    check_schema_events("POST", RESPONSES_PATH, result)
    check_responses_usage_terminal(stream.payloads)
    return stream


def output_text(body: dict[str, Any]) -> str:
    return "".join(
        part.get("text", "")
        for item in body.get("output", [])
        if item.get("type") == "message"
        for part in item.get("content", [])
        if part.get("type") == "output_text"
    )


def messages_json(client: SuiteClient, payload: dict[str, Any],
                  path: str = MESSAGES_PATH) -> dict[str, Any]:
    response = client.post(path, payload, headers=ANTHROPIC_HEADERS)
    expect_status(response, 200)
    body: dict[str, Any] = json_body(response)
    check_anthropic_message_body(body)
    check_schema("POST", MESSAGES_PATH, 200, body)
    return body


def messages_stream(client: SuiteClient, payload: dict[str, Any]) -> AnthropicStream:
    result = client.stream(MESSAGES_PATH, {**payload, "stream": True})
    expect_status(result, 200)
    check_sse_content_type(result)
    stream = check_anthropic_stream(parse_sse(result.text).events)
    if stream.terminal == "message_stop":
        check_anthropic_message_body(stream.message)
    check_schema_events("POST", MESSAGES_PATH, result)
    return stream


def message_text(body: dict[str, Any]) -> str:
    return "".join(b.get("text", "") for b in body.get("content", []) if b.get("type") == "text")
