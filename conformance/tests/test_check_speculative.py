"""The speculative-decoding checks accept what the reference describes and reject the rest."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.speculative import (
    check_draft_model_refused,
    check_draft_timings,
    check_no_draft_timings,
    check_speculative_exact,
    check_timings_on_finish_chunk_only,
)
from mlxcel_conformance.errors import ConformanceFailure

TIMINGS: dict[str, Any] = {
    "prompt_n": 10, "prompt_ms": 5.0, "prompt_per_token_ms": 0.5, "prompt_per_second": 2000.0,
    "predicted_n": 8, "predicted_ms": 4.0, "predicted_per_token_ms": 0.5,
    "predicted_per_second": 2000.0, "draft_n": 9, "draft_n_accepted": 6, "draft_rounds": 3,
    "draft_kind": "prompt-lookup",
}


def _chunk(finish: str | None, timings: bool = False) -> dict[str, Any]:
    chunk: dict[str, Any] = {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
    if timings:
        chunk["timings"] = TIMINGS
    return chunk


def test_valid_timings_pass() -> None:
    check_draft_timings(TIMINGS, completion_tokens=8)
    chunks = [_chunk(None), _chunk(None), _chunk("stop", timings=True), {"choices": []}]
    assert check_timings_on_finish_chunk_only(chunks) == TIMINGS
    check_no_draft_timings([{"choices": []}, {"timings": {"prompt_n": 1}}], "off")
    check_speculative_exact("abc", "abc", 3, 3)
    check_draft_model_refused(400, "/etc", {})
    check_draft_model_refused(501, "/etc", {})


@pytest.mark.parametrize("change", [
    {"draft_n_accepted": 10}, {"draft_rounds": 0}, {"draft_kind": ""}, {"draft_n": -1},
    {"draft_n": True}, {"predicted_n": 7},
])
def test_bad_timings_fail(change: dict[str, Any]) -> None:
    with pytest.raises(ConformanceFailure):
        check_draft_timings({**TIMINGS, **change}, completion_tokens=8)


def test_missing_field_fails() -> None:
    with pytest.raises(ConformanceFailure):
        check_draft_timings({k: v for k, v in TIMINGS.items() if k != "draft_rounds"})


@pytest.mark.parametrize("chunks", [
    [_chunk(None, timings=True), _chunk("stop", timings=True)],  # also mid-stream
    [_chunk(None, timings=True), _chunk("stop")],  # only mid-stream
    [_chunk(None), _chunk("stop")],  # nowhere
])
def test_timings_outside_the_finish_chunk_fail(chunks: list[dict[str, Any]]) -> None:
    with pytest.raises(ConformanceFailure):
        check_timings_on_finish_chunk_only(chunks)


def test_other_failures() -> None:
    with pytest.raises(ConformanceFailure):
        check_no_draft_timings([{"timings": TIMINGS}], "draft_model was null")
    with pytest.raises(ConformanceFailure):
        check_speculative_exact("abc", "abd", 3, 3)
    with pytest.raises(ConformanceFailure):
        check_draft_model_refused(200, "/etc", {})
