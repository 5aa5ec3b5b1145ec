"""Replay the golden transcripts: ``exact`` against the same fixture model, ``shape`` elsewhere."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.goldens import (
    case_from_document,
    compare_transcripts,
    load_documents,
    send,
)


def _params() -> list[Any]:
    params = []
    for path, doc in load_documents():
        mark = pytest.mark.conformance(family=doc["family"], feature=doc["feature"])
        params.append(pytest.param(doc, id=f"{doc['family']}/{path.stem}", marks=mark))
    return params


@check(
    "golden_transcript",
    severity=Severity.MEDIUM,
    description="The response matches its golden transcript (exact or shape mode)",
)
def check_golden(expected: dict[str, Any], got: dict[str, Any], mode: str) -> None:
    diffs = compare_transcripts(expected, got, mode)
    if diffs:
        fail(
            "golden_transcript",
            f"{len(diffs)} difference(s) from the golden ({mode} mode): " + "; ".join(diffs[:3]),
            mode=mode,
            diffs=diffs[:40],
        )


@pytest.mark.parametrize("doc", _params())
def test_golden(
    client: SuiteClient, model_name: str | None, golden_mode: str, doc: dict[str, Any]
) -> None:
    got = send(client, case_from_document(doc), model_name)
    check_golden(doc["response"], got, golden_mode)
