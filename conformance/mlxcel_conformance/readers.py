"""Reading an answer to judge a behaviour, without judging its shape.

One defect, one FAIL: a behaviour feature (``chat.max_tokens``, ``chat.seed.deterministic``,
``chat.tools.call``, ``responses.tools.function_call``, ...) judges what its name says. The shape
of a body or of a stream (every key the contract requires, the chunk identity, the event order,
the terminator) is judged once, by the shape features: ``chat.json.body``,
``chat.stream.framing``, ``completions.json.body``, ``completions.stream.framing``,
``responses.json.body``, ``responses.stream.event_order``, ``anthropic.json.body``,
``anthropic.stream.event_order``, the ``parity.*`` features and the goldens. Those use the
strict flows (``flows.chat_json``, ``flows.chat_stream``, ``flows_typed.responses_json``...).

The readers here ask only what a behaviour reads: a 200, a JSON object (or SSE events whose data
is JSON), and the one container the behaviour looks into (``choices[0]``, a Response's
``output``, a Message's ``content``). An answer without it cannot be judged at all; that fails
under ``answer_readable`` (one defect row, whatever the behaviour). A stream is assembled the
way a lenient client would assemble it (deltas in arrival order, the last response object, the
blocks by index), never rejected for its order.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import httpx

from .checks import sources
from .checks.anthropic_events import DELTA_FIELDS, AnthropicStream
from .checks.contract_edges import judge_refusal
from .checks.registry import check, fail
from .checks.responses_events import TERMINAL_STATUS, ResponsesStream
from .client import StreamResult, SuiteClient, json_body
from .defects import refusal
from .errors import Severity
from .flows import CHAT_PATH, COMPLETIONS_PATH, OpenAIStream
from .sse import parse_sse

RESPONSES_PATH = "/v1/responses"
MESSAGES_PATH = "/v1/messages"
ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01"}
_SOURCES = {CHAT_PATH: sources.OPENAI_CHAT, COMPLETIONS_PATH: sources.OPENAI_COMPLETIONS,
            RESPONSES_PATH: sources.RESPONSES, MESSAGES_PATH: sources.ANTHROPIC}


@check("answer_readable", severity=Severity.CRITICAL,
       description="an answer has what every behaviour reads (choices[0], output, content)")
def unreadable(path: str, why: str, **evidence: Any) -> None:
    """Fail: the answer to ``path`` cannot be read at all (``why``)."""
    route = _route(path)
    fail("answer_readable", f"{route}: {why}", source=_SOURCES[route], **evidence)


def _route(path: str) -> str:
    """The documented route ``path`` is (or is an alias of)."""
    return next((p for p in _SOURCES if path.endswith(p.removeprefix("/v1"))), CHAT_PATH)


def _ok(path: str, response: httpx.Response | StreamResult,
        payload: dict[str, Any] | None = None) -> None:
    """A valid request is answered 200; the FAIL cites the route's API reference. A clean
    refusal of an optional field of ``payload`` is UNSUPPORTED (checks/contract_edges.py)."""
    status = response.status_code if isinstance(response, httpx.Response) else response.status
    if status != 200:
        judge_refusal(path, payload, status, response.text)
        fail("http_status", f"expected HTTP 200, got {status}",
             source=f"{_SOURCES[_route(path)]}: a valid request is answered 200", status=status,
             body=response.text[:2000], defect=refusal(status, response.text))


# -- OpenAI chat and completions -----------------------------------------------------------

def read_json(client: SuiteClient, payload: dict[str, Any], path: str = CHAT_PATH,
              headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A 200 JSON object from POST ``path`` (no shape checks)."""
    response = client.post(path, payload, **({"headers": headers} if headers else {}))
    _ok(path, response, payload)
    body = json_body(response)
    if not isinstance(body, dict):
        unreadable(path, "the answer is not a JSON object", body=body)
    return body


def read_chat(client: SuiteClient, payload: dict[str, Any],
              path: str = CHAT_PATH) -> dict[str, Any]:
    """A chat (or, on ``/v1/completions``, completion) answer whose ``choices[0]`` carries a
    ``message`` object (a ``text``)."""
    body = read_json(client, payload, path)
    choices = body.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    wanted = "text" if path.endswith("/completions") and "chat" not in path else "message"
    ok = isinstance(first, dict) and (
        isinstance(first.get("text"), str) if wanted == "text"
        else isinstance(first.get("message"), dict))
    if not ok:
        unreadable(path, f"the answer has no choices[0].{wanted}", body=body)
    return body


def _payloads(path: str, result: StreamResult) -> list[Any]:
    payloads = []
    for index, event in enumerate(parse_sse(result.text).events):
        if event.data == "[DONE]":
            continue
        try:
            payloads.append(json.loads(event.data))
        except ValueError:
            unreadable(path, f"stream event {index} carries data that is not JSON",
                       data=event.data[:500])
    return payloads


def read_stream(client: SuiteClient, payload: dict[str, Any],
                path: str = CHAT_PATH) -> OpenAIStream:
    """A 200 stream of ``path`` (chat or completions) as its decoded chunks, ``[DONE]`` left
    out; framing, chunk identity and order are ``chat.stream.framing``'s business."""
    result = client.stream(path, {**payload, "stream": True})
    _ok(path, result, payload)
    return OpenAIStream(result, [p for p in _payloads(path, result) if isinstance(p, dict)])


def last_finish_reason(stream: OpenAIStream) -> str | None:
    reasons = stream.finish_reasons()
    return reasons[-1] if reasons else None


# -- OpenAI Responses ----------------------------------------------------------------------

def read_response(client: SuiteClient, payload: dict[str, Any],
                  path: str = RESPONSES_PATH) -> dict[str, Any]:
    """A Response object with an ``output`` list."""
    body = read_json(client, payload, path)
    if not isinstance(body.get("output"), list):
        unreadable(path, "the Response has no output list", body=body)
    return body


def read_response_stream(client: SuiteClient, payload: dict[str, Any]) -> ResponsesStream:
    """A Responses stream as a lenient client reads it: the text deltas in order and the
    response object of the terminal event; the event order is ``responses.stream.event_order``'s
    business."""
    result = client.stream(RESPONSES_PATH, {**payload, "stream": True})
    _ok(RESPONSES_PATH, result, payload)
    events = [p for p in _payloads(RESPONSES_PATH, result) if isinstance(p, dict)]
    if not events:
        unreadable(RESPONSES_PATH, "the stream has no events")
    final = next((e.get("response") for e in reversed(events)
                  if e.get("type") in TERMINAL_STATUS), None)
    response = final if isinstance(final, dict) else {}
    if response and not isinstance(response.get("output"), list):
        unreadable(RESPONSES_PATH, "the terminal response has no output list", response=response)
    text = "".join(str(e.get("delta") or "") for e in events
                   if e.get("type") == "response.output_text.delta")
    return ResponsesStream(payloads=events, terminal=str(events[-1].get("type")),
                           response=response, output_text=text, unknown_events=[])


# -- Anthropic Messages --------------------------------------------------------------------

def read_message(client: SuiteClient, payload: dict[str, Any],
                 path: str = MESSAGES_PATH) -> dict[str, Any]:
    """A Message object with a ``content`` list."""
    body = read_json(client, payload, path, headers=ANTHROPIC_HEADERS)
    if not isinstance(body.get("content"), list):
        unreadable(path, "the Message has no content list", body=body)
    return body


def read_message_stream(client: SuiteClient, payload: dict[str, Any]) -> AnthropicStream:
    """A Messages stream assembled as a lenient client would: message_start's message, each
    block by its index with its deltas joined, message_delta's stop reason and usage; the
    event order is ``anthropic.stream.event_order``'s business."""
    result = client.stream(MESSAGES_PATH, {**payload, "stream": True})
    _ok(MESSAGES_PATH, result, payload)
    events = [p for p in _payloads(MESSAGES_PATH, result) if isinstance(p, dict)]
    if not events:
        unreadable(MESSAGES_PATH, "the stream has no events")
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    pieces: dict[int, dict[str, list[str]]] = {}
    for event in events:
        kind, index = event.get("type"), event.get("index")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message = copy.deepcopy(event["message"])
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[int(index or 0)] = copy.deepcopy(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            delta = event["delta"]
            field = DELTA_FIELDS.get(str(delta.get("type")))
            if field is not None and isinstance(delta.get(field[0]), str):
                pieces.setdefault(int(index or 0), {}).setdefault(
                    str(delta["type"]), []).append(delta[field[0]])
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            if isinstance(event.get("usage"), Mapping):
                message.setdefault("usage", {}).update(event["usage"])
    message["content"] = [_joined(blocks[i], pieces.get(i, {})) for i in sorted(blocks)]
    return AnthropicStream(payloads=events, terminal=str(events[-1].get("type")),
                           message=message, unknown_blocks=[])


def _joined(block: dict[str, Any], pieces: dict[str, list[str]]) -> dict[str, Any]:
    for kind, parts in pieces.items():
        target, joined = DELTA_FIELDS[kind][1], "".join(parts)
        if kind != "input_json_delta":
            block[target] = str(block.get(target) or "") + joined
            continue
        try:
            block[target] = json.loads(joined) if joined else {}
        except ValueError:
            block[target] = joined  # compared as it came: a broken call differs from any other
    return block
