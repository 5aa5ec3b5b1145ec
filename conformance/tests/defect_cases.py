"""What the defect tests build their reports from: a check's failure as the suite raises it,
and a report's FAIL record of it (test_defects.py, test_defect_display.py)."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.report import Record, Report, Verdict

LOGPROBS = "choices[0] lacks the `logprobs` key (null is fine)"


def raised(check: str, message: str, **evidence: Any) -> ConformanceFailure:
    """The failure ``check`` raises with ``message`` and ``evidence``."""
    with pytest.raises(ConformanceFailure) as info:
        fail(check, message, **evidence)
    return info.value


def add_fail(report: Report, feature: str, failure: ConformanceFailure,
             family: str = "chat") -> None:
    """``failure`` as the FAIL record of ``family``'s ``feature`` in ``report``."""
    report.add(Record(family, feature, Verdict.FAIL, checks=[failure.check],
                      message=failure.message, evidence=failure.evidence))
