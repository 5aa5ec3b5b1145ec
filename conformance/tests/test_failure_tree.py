"""Tests for mlxcel_conformance.errors: the two failure kinds and their evidence."""

from __future__ import annotations

import json

from mlxcel_conformance.errors import (
    EVIDENCE_TEXT_LIMIT,
    ConformanceFailure,
    SetupError,
    Severity,
    clip_evidence,
)


def test_failure_kinds_never_mix() -> None:
    assert not issubclass(ConformanceFailure, SetupError)
    assert not issubclass(SetupError, ConformanceFailure)


def test_failure_fields_and_message() -> None:
    failure = ConformanceFailure("done_terminator", "no [DONE]", Severity.CRITICAL, {"n": 1})
    assert str(failure) == "[done_terminator] no [DONE]"
    assert failure.to_dict() == {
        "check": "done_terminator",
        "message": "no [DONE]",
        "severity": "critical",
        "evidence": {"n": 1},
    }


def test_default_severity_and_evidence() -> None:
    failure = ConformanceFailure("x", "y")
    assert failure.severity is Severity.HIGH and failure.evidence == {}


def test_evidence_is_clipped_and_serialisable() -> None:
    evidence = {"text": "x" * 10_000, "raw": b"\xffabc", "items": list(range(500)), "obj": object()}
    failure = ConformanceFailure("c", "m", evidence=evidence)
    text = failure.evidence_json()
    assert len(text) < 4 * EVIDENCE_TEXT_LIMIT
    decoded = json.loads(text)
    assert decoded["text"].startswith("x" * EVIDENCE_TEXT_LIMIT) and "more chars" in decoded["text"]
    assert decoded["raw"] == "\ufffdabc"
    assert "more items" in decoded["items"][-1]
    assert decoded["obj"].startswith("<object")


def test_clip_keeps_small_values() -> None:
    value = {"a": [1, 2.5, None, True, "s"], "b": {"c": "d"}}
    assert clip_evidence(value) == value
