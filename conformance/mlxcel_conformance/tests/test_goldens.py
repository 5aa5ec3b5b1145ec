"""Replay the golden transcripts: ``exact`` against the same fixture model, ``shape`` elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.golden_diff import format_case
from mlxcel_conformance.goldens import (
    case_from_document,
    compare_transcripts,
    load_documents,
    send,
)
from mlxcel_conformance.tests.test_audio import serves_audio

# Families whose goldens need a capability the server may lack: replayed by that family's own
# tests behind its probe (vision: tests/test_vision.py), not here.
REPLAYED_BY_FAMILY = {"vision"}


def _params() -> list[Any]:
    params = []
    for path, doc in load_documents():
        if doc["family"] in REPLAYED_BY_FAMILY:
            continue
        mark = pytest.mark.conformance(family=doc["family"], feature=doc["feature"])
        params.append(pytest.param(doc, id=f"{doc['family']}/{path.stem}", marks=mark))
    return params


@check(
    "golden_transcript",
    severity=Severity.MEDIUM,
    description="The response matches its golden transcript (exact or shape mode)",
)
def check_golden(
    expected: dict[str, Any], got: dict[str, Any], mode: str, case: str = "case"
) -> None:
    diffs = compare_transcripts(expected, got, mode)
    if diffs:
        # The message carries the whole expected/got block so pytest's failure output reads
        # as a diff; the evidence keeps the raw lines and what the server sent.
        fail(
            "golden_transcript",
            format_case(case, mode, diffs[:40]),
            mode=mode,
            case=case,
            diffs=diffs[:40],
            got_status=got.get("status"),
            got=got.get("body", got.get("events", got.get("body_text"))),
        )


@pytest.mark.parametrize("doc", _params())
def test_golden(
    client: SuiteClient, model_name: str | None, golden_mode: str, doc: dict[str, Any]
) -> None:
    if doc["case"].endswith("_unconfigured") and doc["family"] == "audio" \
            and serves_audio(client):
        pytest.skip("UNSUPPORTED: the server has an audio model (see test_audio)")
    got = send(client, case_from_document(doc), model_name)
    check_golden(doc["response"], got, golden_mode, f"{doc['family']}/{doc['case']}")
