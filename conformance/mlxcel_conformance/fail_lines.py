"""The terminal's view of a FAIL: one line per defect, naming the feature that first showed it,
the check, the public source, one line of evidence and where else the defect was seen; of a
LENIENT or INCONCLUSIVE row: one line naming the feature, the check and what the server did;
and of an ERROR: one line per distinct cause. The full evidence goes to the report
(``--report DIR``); ``-v`` or ``--tb=...`` bring pytest's tracebacks back.
"""

from __future__ import annotations

import json
from typing import Any

from .checks.sources import source_of
from .defects import Defect, fail_rows
from .report import Record, Verdict

LINE_LIMIT = 300
_PART_LIMITS = {"message": 140, "evidence": 90, "source": 70}
# Evidence keys that say where the failure came from, not what the server sent.
_NOT_EVIDENCE = frozenset({"source", "defect", "cause"})


def _one_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _evidence(evidence: dict[str, Any]) -> str:
    shown = {k: v for k, v in evidence.items() if k not in _NOT_EVIDENCE}
    if not shown:
        return ""
    return json.dumps(shown, ensure_ascii=False, sort_keys=True, default=str)


def fail_line(record: Record, defect: Defect | None = None) -> str:
    """``FAIL family feature [check] message | evidence: {...} | source: ... | also seen in:
    ...``, one line. With ``defect``: the line of that defect (one FAIL per defect), at the
    feature that first showed it, naming where else it was seen."""
    check = record.checks[-1] if record.checks else "?"
    message, source = record.message, str(record.evidence.get("source") or "")
    if defect is not None:
        check, message, source = defect.checks[0], defect.message, defect.source or source
    source = source or source_of(check) or ""
    parts = [f"FAIL {record.family} {record.feature} [{check}] "
             + _one_line(message, _PART_LIMITS["message"])]
    evidence = _evidence(record.evidence)
    if evidence:
        parts.append("evidence: " + _one_line(evidence, _PART_LIMITS["evidence"]))
    if source:
        parts.append("source: " + _one_line(source, _PART_LIMITS["source"]))
    seen = [] if defect is None else defect.also_seen(record.family, record.feature)
    if seen:
        parts.append("also seen in: " + ", ".join(f"{family} {feature}"
                                                  for family, feature in seen))
    return _one_line(" | ".join(parts), LINE_LIMIT)


def defect_lines(records: list[Record]) -> list[str]:
    """One FAIL line per distinct defect of the run (``defects.fail_rows``)."""
    by_feature = {(record.family, record.feature): record for record in records}
    return [fail_line(by_feature[where], defect)
            for defect, where in fail_rows(record.to_dict() for record in records)
            if where in by_feature]


# The verdicts shown one line each beside the FAILs: findings that are not FAILs.
SHOWN = (Verdict.LENIENT, Verdict.INCONCLUSIVE)


def shown_line(record: Record) -> str:
    """``LENIENT family feature [check] message``, one line (INCONCLUSIVE alike)."""
    check = f" [{record.checks[-1]}]" if record.checks else ""
    return _one_line(f"{record.verdict.value} {record.family} {record.feature}{check} "
                     + record.message, LINE_LIMIT)


def error_lines(records: list[Record]) -> list[str]:
    """One line per distinct ERROR (a fault of the suite's setup, such as a reference server
    that did not start, often shared by every feature), with how many features it stopped."""
    by_message: dict[str, int] = {}
    for record in records:
        if record.verdict is Verdict.ERROR:
            first = record.message.strip().splitlines()[0] if record.message.strip() else "?"
            by_message[first] = by_message.get(first, 0) + 1
    return [_one_line(f"ERROR ({count} feature{'s' if count > 1 else ''}) {message}",
                      LINE_LIMIT) for message, count in by_message.items()]
