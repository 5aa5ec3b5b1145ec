"""The suite's two failure kinds: faults of the server under test and faults of the suite's setup.

```
Exception
 ├── ConformanceFailure   the server under test broke a property of the spec.
 │                        Carries the check name, a Severity and small JSON evidence;
 │                        reported as FAIL.
 └── SetupError           the suite itself could not run the check: bad URL, the server did
                          not start, a bad spec or profile name, an unknown check.
                          Reported as ERROR, never as a FAIL of the server.
```

The two never mix: a check raises only `ConformanceFailure`; fixtures, the CLI and the loaders
raise only `SetupError`. Anything else escaping a test is a bug in the suite.
"""

from __future__ import annotations

import enum
import json
from typing import Any

# Evidence lands in conformance.json and in the Markdown matrix: keep each string short enough
# to read, long enough to show the offending event.
EVIDENCE_TEXT_LIMIT = 2048
_EVIDENCE_MAX_ITEMS = 50


class Severity(str, enum.Enum):
    """How much a failure hurts a client of the server."""

    CRITICAL = "critical"  # official SDKs break, or clients hang / lose data
    HIGH = "high"  # the response is wrong for common clients
    MEDIUM = "medium"  # strict clients break; lenient ones cope
    LOW = "low"  # cosmetic or spec-pedantic


def clip_evidence(value: Any, limit: int = EVIDENCE_TEXT_LIMIT) -> Any:
    """Return `value` made JSON-serialisable, with long strings and lists truncated."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        return value[:limit] + f"... [{len(value) - limit} more chars]"
    if isinstance(value, bytes):
        return clip_evidence(value.decode("utf-8", errors="replace"), limit)
    if isinstance(value, dict):
        return {
            str(k): clip_evidence(v, limit) for k, v in list(value.items())[:_EVIDENCE_MAX_ITEMS]
        }
    if isinstance(value, (list, tuple)):
        items = [clip_evidence(v, limit) for v in value[:_EVIDENCE_MAX_ITEMS]]
        if len(value) > _EVIDENCE_MAX_ITEMS:
            items.append(f"... [{len(value) - _EVIDENCE_MAX_ITEMS} more items]")
        return items
    return clip_evidence(repr(value), limit)


class ConformanceFailure(Exception):
    """The server under test violated the property checked by `check`."""

    def __init__(
        self,
        check: str,
        message: str,
        severity: Severity = Severity.HIGH,
        evidence: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(f"[{check}] {message}")
        self.check = check
        self.message = message
        self.severity = severity
        self.evidence: dict[str, Any] = clip_evidence(evidence or {})

    def to_dict(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "message": self.message,
            "severity": self.severity.value,
            "evidence": self.evidence,
        }

    def evidence_json(self) -> str:
        return json.dumps(self.evidence, ensure_ascii=False, sort_keys=True)


class SetupError(Exception):
    """The suite could not run: its configuration, not the server under test, is at fault."""
