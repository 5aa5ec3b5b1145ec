"""Golden normalization and the two replay modes."""

from __future__ import annotations

import copy
from typing import Any

from mlxcel_conformance.goldens import (
    compare_exact,
    compare_shape,
    compare_transcripts,
    event_kinds,
    load_documents,
    normalize,
)

BODY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
                 "finish_reason": "stop", "logprobs": None}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_normalize_replaces_volatile_fields() -> None:
    out = normalize(BODY)
    assert out["id"] == "<id>" and out["created"] == "<created>" and out["model"] == "<model>"
    assert out["choices"][0]["message"]["content"] == "Hi"


def test_exact_mode_sees_text_and_count_changes() -> None:
    other = copy.deepcopy(BODY)
    other["choices"][0]["message"]["content"] = "Hello"
    other["usage"]["completion_tokens"] = 2
    diffs = compare_exact(BODY, other)
    assert any("content" in d for d in diffs) and any("completion_tokens" in d for d in diffs)


def test_exact_mode_allows_float_noise_but_not_a_different_number() -> None:
    logprob = {"token": "a", "logprob": -9.296924591064453, "bytes": [97]}
    assert compare_exact(logprob, {**logprob, "logprob": -9.296923637390137}) == []
    assert compare_exact(logprob, {**logprob, "logprob": -9.29}) != []
    assert compare_exact({"n": 3}, {"n": 3.0000001}) != []  # whole numbers stay exact


def test_shape_mode_tolerates_values_but_not_types_or_missing_keys() -> None:
    other = copy.deepcopy(BODY)
    other["choices"][0]["message"]["content"] = "Something else"
    other["extra"] = True
    assert compare_shape(BODY, other) == []
    other["usage"]["total_tokens"] = "4"
    del other["choices"][0]["finish_reason"]
    diffs = compare_shape(BODY, other)
    assert any("total_tokens" in d for d in diffs) and any("finish_reason" in d for d in diffs)


def test_event_kinds_collapse_content_and_ignore_role_only_chunks() -> None:
    events = [_chunk({"role": "assistant"}), _chunk({"content": "a"}), _chunk({"content": "b"}),
              _chunk({}, "stop"), {"choices": [], "usage": {"total_tokens": 1}}, "[DONE]"]
    assert event_kinds(events) == ["content", "finish", "usage", "done"]
    merged = [_chunk({"role": "assistant", "content": "a"}), _chunk({}, "stop"), "[DONE]"]
    assert event_kinds(merged) == ["content", "finish", "done"]


def test_transcript_status_mismatch_is_reported_first() -> None:
    expected = {"status": 200, "content_type": "application/json", "body": BODY}
    got = {"status": 404, "content_type": "application/json", "body": {"error": "x"}}
    assert compare_transcripts(expected, got, "shape") == ["status: expected 200, got 404"]


def test_normalize_keeps_integer_ids() -> None:
    # a transcription segment's id is its index, not a generated identifier
    out = normalize({"id": "tr-1", "segments": [{"id": 0, "start": 0.0}]})
    assert out == {"id": "<id>", "segments": [{"id": 0, "start": 0.0}]}


SRT = "1\n00:00:00,000 --> 00:00:00,900\nhello\n"


def test_text_bodies_compare_line_by_line_in_exact_mode() -> None:
    expected = {"status": 200, "content_type": "application/x-subrip", "body_text": SRT}
    got = {**expected, "body_text": SRT.replace("00,900", "01,000")}
    assert compare_transcripts(expected, expected, "exact") == []
    diffs = compare_transcripts(expected, got, "exact")
    assert len(diffs) == 1 and diffs[0].startswith("body_text[1]: expected")
    assert compare_transcripts(expected, got, "shape") == []


def test_text_bodies_in_shape_mode() -> None:
    expected = {"status": 200, "content_type": "text/plain", "body_text": "hello\n"}
    assert compare_transcripts(expected, {**expected, "body_text": ""}, "shape") == [
        "body_text: expected a non-empty text"]
    as_json = {"status": 200, "content_type": "text/plain", "body": {"text": "hello"}}
    assert compare_transcripts(expected, as_json, "shape")[0].startswith(
        "body_text: expected text, got JSON")


def test_committed_goldens_are_well_formed() -> None:
    documents = load_documents()
    assert documents, "no goldens committed"
    for path, doc in documents:
        assert path.stem == doc["case"] and path.parent.name == doc["family"]
        assert {"status", "content_type"} <= set(doc["response"])
        assert {"events", "body", "body_text"} & set(doc["response"])
