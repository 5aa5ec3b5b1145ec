"""Distinct defects: a run's FAILs grouped by check and cause.

A FAIL is a feature's verdict; a defect is what the server does wrong. Several features may
fail for one defect (two shape features judging one missing key; three goldens whose streams
break the same event rule), and one feature may fail for several (its parameter cases). Each
failing test's failure becomes one defect entry: its ``key`` is the check and the cause, where
the cause is what the check names (``evidence["defect"]``, set where a check speaks for another:
a golden whose diff came from an event state machine counts under that machine's check) or the
failure's message with positions left out (``chunk 3`` and ``chunk 5`` are one cause; a
wrong status is its status, whatever bad input showed it). The family (a route, or a client
like the OpenAI SDK) is part of the key: one cause on two routes is two defects. A transport
failure's cause also names the request it happened on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

KEY_LIMIT = 300
_POSITIONS = (
    (re.compile(r"\b(chunk|chunks|event|events|choice|item|block|index|line|column|char)"
                r" \d+\b"), r"\1 N"),
    (re.compile(r"\[\d+\]"), "[N]"),
    (re.compile(r"/\d+(?=/|:|\s|$)"), "/N"),
    (re.compile(r"\b\d+(\.\d+)? ?s\b"), "N s"),
)


def normalize(text: str) -> str:
    """``text`` with positions and timings replaced by N: the cause, not the instance."""
    for pattern, replacement in _POSITIONS:
        text = pattern.sub(replacement, text)
    return " ".join(text.split())[:KEY_LIMIT]


def refusal(status: int, text: str) -> str:
    """The cause of an unexpected status: the status and what the server said (its error
    message), so one refusal shown by two features is one defect and two are two."""
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    error = body.get("error", body.get("detail")) if isinstance(body, dict) else body
    if isinstance(error, dict):
        error = error.get("message", error)
    said = " ".join(str(error).split())[:160]
    return f"http_status: HTTP {status}: {said}" if said else f"http_status: HTTP {status}"


def entry(check: str, message: str, evidence: Mapping[str, Any],
          family: str = "") -> dict[str, str]:
    """The defect of one failing test of ``family`` (a family is a route or a client: one
    cause on two routes is two defects)."""
    cause = evidence.get("defect")
    if not (isinstance(cause, str) and cause):
        cause = f"{check}: {message}"
        request = evidence.get("request")
        if evidence.get("transport_error") and isinstance(request, str):
            cause = f"{check} on {request.split('?')[0]}: {message}"
    key = normalize(f"[{family}] {cause}" if family else cause)
    return {"key": key, "check": check, "message": message[:KEY_LIMIT],
            "source": str(evidence.get("source") or "")}


@dataclass
class Defect:
    """One distinct defect of a run and the features it fails."""

    key: str
    message: str
    source: str
    checks: list[str] = field(default_factory=list)
    features: list[tuple[str, str]] = field(default_factory=list)  # (family, feature)


def distinct(records: Iterable[Mapping[str, Any]]) -> list[Defect]:
    """The distinct defects of a run's FAIL records (dicts as in ``conformance.json``), in the
    order first seen; a record written before defects were kept counts as one defect."""
    found: dict[str, Defect] = {}
    for record in records:
        if record.get("verdict") != "FAIL":
            continue
        entries = record.get("defects") or [entry(
            (record.get("checks") or ["?"])[-1], str(record.get("message", "")),
            record.get("evidence") or {}, str(record.get("family", "")))]
        for item in entries:
            defect = found.setdefault(item["key"], Defect(item["key"], item["message"],
                                                          item["source"]))
            if item["check"] not in defect.checks:
                defect.checks.append(item["check"])
            where = (str(record.get("family")), str(record.get("feature")))
            if where not in defect.features:
                defect.features.append(where)
    return list(found.values())
