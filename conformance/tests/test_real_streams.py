"""Every recording from the real OpenAI and Anthropic APIs must be ACCEPTED by the checks that
apply to it: SSE framing, the protocol's order checks, body checks and error-shape checks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_stream_corpus import (
    all_files,
    cassette_response,
    ids,
    jsonl_events,
    read,
    recording_responses,
    status_from_name,
)

from mlxcel_conformance.checks import run_check
from mlxcel_conformance.checks.openai_common import chat_logprobs_entries
from mlxcel_conformance.sse import parse_sse


def accept_chat_stream(path: Path) -> None:
    stream = parse_sse(read(path))
    chunks = run_check("sse_framing", stream)
    run_check("done_terminator", stream)
    run_check("chat_chunk_object", chunks)
    run_check("chat_first_chunk_role", chunks)
    run_check("chat_chunk_order", chunks)
    run_check("tool_call_deltas", chunks)
    run_check("usage_chunk_last", chunks)  # every recording asked for usage
    run_check("logprobs_shape", chat_logprobs_entries(chunks))


def accept_responses_stream(path: Path) -> None:
    if path.name.endswith(".jsonl"):
        events = jsonl_events(path)
    else:
        stream = parse_sse(read(path))
        run_check("sse_framing", stream)
        run_check("no_done_terminator", stream)
        events = list(stream.events)
    result = run_check("responses_event_order", events)
    if result.response:
        run_check("response_body", result.response)
    for payload in result.payloads:
        if payload.get("type") == "response.output_text.delta":
            run_check("logprobs_shape", payload.get("logprobs", []))


def accept_anthropic_stream(path: Path) -> None:
    stream = parse_sse(read(path))
    run_check("sse_framing", stream)
    run_check("no_done_terminator", stream)
    result = run_check("anthropic_event_order", stream.events)
    run_check("anthropic_message_body", result.message)


def accept_anthropic_message(path: Path) -> None:
    data = json.loads(read(path))
    if isinstance(data, list):  # an SDK recording of request/response pairs
        for status, body in recording_responses(path):
            assert status == 200
            run_check("anthropic_message_body", body)
    else:
        run_check("anthropic_message_body", data)


def accept_error(path: Path) -> None:
    if path.name.endswith(".cassette.yaml"):
        responses = [cassette_response(path)]
    elif path.name.startswith("anthropic-sdk-recording"):
        responses = [(s, b) for s, b in recording_responses(path) if s >= 400]
        for status, body in recording_responses(path):
            if status < 400:
                run_check("anthropic_message_body", body)
    else:
        responses = [(status_from_name(path), read(path))]
    for status, body in responses:
        name = "error_body_anthropic" if path.name.startswith("anthropic") else "error_body_openai"
        run_check(name, body, status=status, expected=status)


ACCEPTORS = {
    "openai-chat/stream/*.sse": accept_chat_stream,
    "openai-chat/json/*.json": lambda p: run_check("chat_completion_body", json.loads(read(p))),
    "openai-responses/stream/*": accept_responses_stream,
    "openai-responses/json/*.json": lambda p: run_check("response_body", json.loads(read(p))),
    "anthropic/stream/*.sse": accept_anthropic_stream,
    "anthropic/json/*.json": accept_anthropic_message,
    "errors/*": accept_error,
}


FILES = all_files()


def test_the_corpus_is_there() -> None:
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_real_recording_is_accepted(path: Path) -> None:
    matching = [accept for pattern, accept in ACCEPTORS.items() if path.match(pattern)]
    assert len(matching) == 1, f"no single set of checks applies to {path}: see ACCEPTORS"
    matching[0](path)
