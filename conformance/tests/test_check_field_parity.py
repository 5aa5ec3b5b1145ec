"""Field parity: the real recordings pass, broken copies and the reference's answers from before
the parity work (``data/reference-before-parity/``, recorded from the plain reference server on
the bundled fixture) fail, naming the keys the real services send."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import real_stream_corpus as corpus

from mlxcel_conformance.checks import field_parity as fp
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.sse import parse_sse

BEFORE = Path(__file__).parent / "data" / "reference-before-parity"

# Recordings older than a key the real service sends today (dates in the corpus README): they
# carry the public spec's minimum, not today's full shape.
OLDER = {
    "openai-chat-stream-logprobs-2024.sse", "openai-chat-stream-n3-choices-2024.sse",
    "openai-chat-stream-text-usage-2024.sse", "openai-responses-stream-function-call-2025-03.sse",
    "openai-responses-stream-incomplete.sse", "openai-responses-stream-reasoning-function-call.sse",
    "openai-response-function-call.json", "openai-response-text.json",
    "openai-responses-stream-error-insufficient-quota.chunks.jsonl",
    "anthropic-stream-text-then-tool-use.sse", "anthropic-stream-redacted-thinking.sse",
    # The SDK's recording (anthropic-python 0.82) predates `stop_details`, which the 2026-04
    # JSON recordings carry.
    "anthropic-sdk-recording-tool-use-then-end-turn.json",
}


def _payloads(text: str) -> list[Any]:
    return [json.loads(e.data) for e in parse_sse(text).events if e.data != "[DONE]"]


def objects_of(path: Path) -> fp.Found:
    """Every object of one recording (or recorded answer), by its kind."""
    name = path.name
    if name.endswith(".jsonl"):
        return fp.responses_event_objects(corpus.payloads(corpus.jsonl_events(path)))
    text = path.read_text(encoding="utf-8")
    if "anthropic-sdk-recording" in name:
        return [found for status, body in corpus.recording_responses(path) if status == 200
                for found in fp.anthropic_message_objects(body)]
    if name.endswith(".sse") or name.endswith("stream"):
        events = _payloads(text)
        if "responses" in name or name.startswith("response"):
            return fp.responses_event_objects(events)
        if "anthropic" in name or name.startswith("message"):
            return fp.anthropic_event_objects(events)
        return fp.chat_chunk_objects(events)
    body = json.loads(text)
    if "response" in name:
        return fp.response_objects(body)
    if "anthropic" in name or name.startswith("message"):
        return fp.anthropic_message_objects(body)
    return fp.chat_completion_objects(body)


RECORDINGS = [p for p in corpus.files("*/*/*") if p.suffix in (".sse", ".json", ".jsonl")]


@pytest.mark.parametrize("path", RECORDINGS, ids=corpus.ids(RECORDINGS))
def test_every_recording_has_the_minimum(path: Path) -> None:
    found = objects_of(path)
    assert len(found) > 1
    fp.check_field_parity(path.name, found)


@pytest.mark.parametrize("path", [p for p in RECORDINGS if p.name not in OLDER],
                         ids=[p.name for p in RECORDINGS if p.name not in OLDER])
def test_recent_recordings_have_the_current_shape(path: Path) -> None:
    fp.check_field_parity_current(path.name, objects_of(path))


@pytest.mark.parametrize("path", [p for p in RECORDINGS if p.name in OLDER],
                         ids=[p.name for p in RECORDINGS if p.name in OLDER])
def test_older_recordings_lack_only_keys_added_since(path: Path) -> None:
    gaps = fp.find_gaps(objects_of(path), current=True)
    assert gaps and not any(gap.wrong for gap in gaps)


def test_every_kind_is_seen_in_the_recordings() -> None:
    seen = {kind for path in RECORDINGS for kind, _, _ in objects_of(path)}
    unseen = set(fp.KINDS) - seen - {"error.openai", "error.openai.error", "error.anthropic",
                                     "error.anthropic.error"}
    assert not unseen


@pytest.mark.parametrize("path", corpus.files("errors/*.json"), ids=corpus.ids(
    corpus.files("errors/*.json")))
def test_recorded_errors_have_their_keys(path: Path) -> None:
    if "sdk-recording" in path.name:
        bodies = [body for status, body in corpus.recording_responses(path) if status >= 400]
    else:
        bodies = [json.loads(corpus.read(path))]
    for body in bodies:
        found = (fp.anthropic_error_objects(body) if "anthropic" in path.name
                 else fp.openai_error_objects(body))
        fp.check_field_parity_current(path.name, found)


# -- deliberately broken copies ---------------------------------------------------------------

def _drop(body: dict[str, Any], *path: str) -> dict[str, Any]:
    broken = copy.deepcopy(body)
    node: Any = broken
    for key in path[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    del node[path[-1]]
    return broken


@pytest.mark.parametrize(("name", "walk", "path"), [
    ("openai-chat-completion-text.json", fp.chat_completion_objects,
     ("choices", "0", "message", "role")),
    ("openai-chat-completion-text.json", fp.chat_completion_objects, ("choices", "0", "index")),
    ("openai-response-text.json", fp.response_objects, ("parallel_tool_calls",)),
    ("openai-response-text.json", fp.response_objects, ("usage", "input_tokens_details")),
    ("anthropic-message-tool-use.json", fp.anthropic_message_objects, ("stop_sequence",)),
    ("anthropic-message-tool-use.json", fp.anthropic_message_objects,
     ("content", "0", "input")),
])
def test_a_missing_required_key_is_caught(name: str, walk: Any, path: tuple[str, ...]) -> None:
    body = json.loads(corpus.read(corpus.find(name)))
    fp.check_field_parity(name, walk(body))
    with corpus.rejects("field_parity") as info:
        fp.check_field_parity(name, walk(_drop(body, *path)))
    assert path[-1] in info.value.message


def test_a_key_of_the_wrong_kind_is_caught() -> None:
    body = json.loads(corpus.read(corpus.find("openai-chat-completion-text.json")))
    body["created"] = "yesterday"
    with corpus.rejects("field_parity"):
        fp.check_field_parity("chat", fp.chat_completion_objects(body))


def test_a_streamed_event_missing_a_key_is_caught() -> None:
    events = _payloads(corpus.read(corpus.find("openai-responses-stream-text.sse")))
    fp.check_field_parity_current("ok", fp.responses_event_objects(events))
    for event in events:
        if event["type"] == "response.output_text.delta":
            del event["content_index"]
            break
    with corpus.rejects("field_parity"):
        fp.check_field_parity("broken", fp.responses_event_objects(events))


# -- the reference before the parity work -----------------------------------------------------

@pytest.mark.parametrize(("name", "expected"), [
    ("chat.json", {"annotations", "service_tier"}),
    ("chat.sse", {"service_tier"}),
    ("response.json", {"completed_at", "presence_penalty", "frequency_penalty", "top_logprobs",
                       "service_tier", "prompt_cache_key", "safety_identifier"}),
    ("response.sse", {"completed_at", "presence_penalty", "frequency_penalty", "top_logprobs",
                      "service_tier", "prompt_cache_key", "safety_identifier"}),
    ("message.json", {"cache_creation", "service_tier", "inference_geo"}),
    ("message.sse", {"cache_creation", "service_tier", "inference_geo"}),
])
def test_the_reference_before_the_parity_work_fails(name: str, expected: set[str]) -> None:
    found = objects_of(BEFORE / name)
    with pytest.raises(ConformanceFailure) as info:
        fp.check_field_parity_current(name, found)
    assert info.value.check == "field_parity_current"
    missing = {key for gap in fp.find_gaps(found, current=True) for key in gap.missing}
    assert expected <= missing, missing
