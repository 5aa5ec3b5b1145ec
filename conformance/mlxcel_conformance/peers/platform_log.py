"""A peer that failed for want of a platform, where only its log says so.

vllm-mlx 0.6.0 constrains ``response_format`` through llguidance's MLX kernel, which exists
only on Metal: on Linux every constrained step raises MLX's ``[metal_kernel] No Metal
back-end`` and the client gets HTTP 500 ``{"detail": "Internal server error during
generation"}``, a generic text that names nothing. The answer alone would be a FAIL; the
peer's own log shows it is the platform (docs/conformance/verdicts.md: ERROR/platform). A peer
declares the text it answers for a failed generation (``Peer.generation_failure``); when its log
names a platform error, the FAILs whose every defect is a 5xx with that text become
ERROR/platform, the log line as their evidence.
"""

from __future__ import annotations

import re

from ..checks.contract_edges import PLATFORM_MESSAGE
from ..checks.verdict_policy import PLATFORM_PREFIX
from ..report import Record, Report, Verdict


def platform_line(log_text: str) -> str | None:
    """The first line of a peer's log that names a platform error, if any."""
    return next((line.strip() for line in log_text.splitlines()
                 if PLATFORM_MESSAGE.search(line)), None)


def generation_failed(record: Record, failure_text: str) -> bool:
    """Whether every defect of a FAIL record is a 5xx answered with ``failure_text``."""
    answered = re.compile(r"HTTP 5\d\d: " + re.escape(failure_text))
    return bool(record.defects) and all(answered.search(d["key"]) for d in record.defects)


def reclassify(report: Report, log_text: str, failure_text: str | None) -> list[Record]:
    """The FAIL records of ``report`` that the peer's log shows failed for the platform, made
    ERROR/platform (the records returned)."""
    line = platform_line(log_text) if failure_text else None
    if line is None or failure_text is None:
        return []
    changed = []
    for record in report.records:
        if record.verdict is Verdict.FAIL and generation_failed(record, failure_text):
            record.verdict = Verdict.ERROR
            record.message = (f"{PLATFORM_PREFIX}HTTP 500 {failure_text!r}; the server's log: "
                              f"{line[:200]}")
            record.evidence = {**record.evidence, "platform_log": line[:500]}
            record.defects = []
            changed.append(record)
    return changed
