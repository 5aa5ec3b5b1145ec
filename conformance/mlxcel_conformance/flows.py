"""Request flows the tests share: build a request, send it, run the checks every response of
that kind must pass, and hand back the parsed result for feature-specific checks."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from . import pace, spec
from .checks.errors_checks import check_error_body_openai
from .checks.openai_chat import (
    check_chat_chunk_object,
    check_chat_chunk_order,
    check_chat_completion_body,
    check_chat_first_chunk_role,
)
from .checks.openai_completions import check_completion_body, check_completion_chunk_order
from .checks.registry import check, fail
from .checks.sse_checks import check_done_terminator, check_sse_framing
from .client import StreamResult, SuiteClient, expect_status, json_body
from .defects import wrong_object
from .errors import Severity
from .sse import parse_sse

CHAT_PATH = "/v1/chat/completions"
COMPLETIONS_PATH = "/v1/completions"


def with_model(model: str | None, payload: dict[str, Any]) -> dict[str, Any]:
    """``payload`` with ``model`` set, unless the model is unknown (then the field is omitted)."""
    return payload if model is None else {"model": model, **payload}


def chat_payload(model: str | None, content: str = "Say hello.", **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "messages": [{"role": "user", "content": content}],
        "max_tokens": pace.answer_tokens(16),
        "temperature": 0,
    }
    payload.update(fields)
    return with_model(model, payload)


def completion_payload(model: str | None, prompt: Any = "The capital of France is",
                       **fields: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {"prompt": prompt, "max_tokens": pace.answer_tokens(16),
                               "temperature": 0}
    payload.update(fields)
    return with_model(model, payload)


# Whether the target claims mlxcel's extensions (set by the plugin from the profile): then its
# bodies are also held to the reference view of the spec, under the extension check.
REFERENCE_SHAPES = {"claimed": False}


@check("schema_conformance", severity=Severity.HIGH,
       description="A response body (or SSE event) matches the public-contract view of openapi/")
def check_schema(method: str, path: str, status: int, body: Any) -> None:
    errors = spec.validate_json(method, path, status, body)
    if errors:
        fail("schema_conformance", f"{method} {path} {status}: {errors[0]}",
             errors=errors[:5], body=body,
             defect=wrong_object(errors[0], body.get("object") if isinstance(body, dict)
                                 else None))
    if REFERENCE_SHAPES["claimed"]:
        check_schema_reference(method, path, status, body)


@check("schema_extension", severity=Severity.MEDIUM,
       description="A body matches the reference view of openapi/ (x-mlxcel-extension keys)")
def check_schema_reference(method: str, path: str, status: int, body: Any) -> None:
    errors = spec.validate_json(method, path, status, body, view=spec.REFERENCE)
    if errors:
        fail("schema_extension", f"{method} {path} {status}: {errors[0]}",
             errors=errors[:5], body=body)


def _object_of(data: str) -> Any:
    try:
        parsed = json.loads(data)
    except ValueError:
        return None
    return parsed.get("object") if isinstance(parsed, dict) else None


def check_schema_events(method: str, path: str, result: StreamResult) -> None:
    views = [(spec.CONTRACT, "schema_conformance")]
    if REFERENCE_SHAPES["claimed"]:
        views.append((spec.REFERENCE, "schema_extension"))
    for view, name in views:
        for index, event in enumerate(parse_sse(result.text).events):
            errors = spec.validate_sse_event(method, path, event.data, event.event, view=view)
            if errors:
                fail(name, f"{method} {path} event {index}: {errors[0]}",
                     errors=errors[:5], data=event.data,
                     defect=wrong_object(errors[0], _object_of(event.data)))


@check("sse_content_type", severity=Severity.HIGH,
       description="A stream is served as text/event-stream")
def check_sse_content_type(result: StreamResult) -> None:
    content_type = result.headers.get("content-type", "")
    if not content_type.startswith("text/event-stream"):
        fail("sse_content_type", f"stream served as {content_type!r}",
             content_type=content_type)


@dataclass
class OpenAIStream:
    result: StreamResult
    chunks: list[dict[str, Any]]

    @property
    def content(self) -> str:
        return "".join(
            (c.get("delta") or {}).get("content") or c.get("text") or ""
            for chunk in self.chunks
            for c in chunk.get("choices") or []
        )

    def finish_reasons(self) -> list[str]:
        return [
            c["finish_reason"]
            for chunk in self.chunks
            for c in chunk.get("choices") or []
            if c.get("finish_reason")
        ]

    def usage(self) -> dict[str, Any] | None:
        for chunk in reversed(self.chunks):
            if chunk.get("usage"):
                usage: dict[str, Any] = chunk["usage"]
                return usage
        return None


def openai_stream(client: SuiteClient, path: str, payload: dict[str, Any]) -> OpenAIStream:
    """Send a streaming request and run the framing checks shared by chat and completions."""
    result = client.stream(path, payload)
    expect_status(result, 200)
    check_sse_content_type(result)
    chunks = check_sse_framing(result.text)
    check_done_terminator(result.text)
    check_schema_events("POST", path, result)
    return OpenAIStream(result, chunks)


def chat_stream(client: SuiteClient, payload: dict[str, Any]) -> OpenAIStream:
    stream = openai_stream(client, CHAT_PATH, {**payload, "stream": True})
    content_chunks = [c for c in stream.chunks if c.get("choices")]
    # every chunk, the usage chunk (choices: []) included, is a chat.completion.chunk
    check_chat_chunk_object(stream.chunks)
    check_chat_first_chunk_role(content_chunks)
    check_chat_chunk_order(content_chunks)
    return stream


def completion_stream(client: SuiteClient, payload: dict[str, Any]) -> OpenAIStream:
    stream = openai_stream(client, COMPLETIONS_PATH, {**payload, "stream": True})
    # every chunk, the usage chunk (choices: []) included, is a text_completion
    check_completion_chunk_order(stream.chunks)
    return stream


def chat_json(client: SuiteClient, payload: dict[str, Any]) -> dict[str, Any]:
    response = client.post(CHAT_PATH, payload)
    expect_status(response, 200)
    body: dict[str, Any] = json_body(response)
    check_chat_completion_body(body)
    check_schema("POST", CHAT_PATH, 200, body)
    return body


def completion_json(client: SuiteClient, payload: dict[str, Any]) -> dict[str, Any]:
    response = client.post(COMPLETIONS_PATH, payload)
    expect_status(response, 200)
    body: dict[str, Any] = json_body(response)
    check_completion_body(body)
    check_schema("POST", COMPLETIONS_PATH, 200, body)
    return body


def message_content(body: dict[str, Any]) -> str:
    return str(body["choices"][0]["message"].get("content") or "")


def response_of(response: httpx.Response) -> tuple[int, Any]:
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text


def openai_error(response: httpx.Response, path: str, status: int = 400) -> dict[str, Any]:
    """The ``error`` object of a POST to ``path`` answered with ``status`` in OpenAI's error
    shape, the body checked against the spec's response for that status."""
    code, body = response_of(response)
    error = check_error_body_openai(body, status=code, expected=status)
    check_schema("POST", path, code, body)
    return error
