"""The verdict classes a check may give, and the outcomes that are no verdict at all.

The policy is written out in docs/conformance/verdicts.md; this module is what the registry
enforces of it. Every registered check declares the classes it may give (``FAIL`` alone unless it
says more), and `registry.fail`, `registry.unsupported` and `registry.lenient` refuse a class its
check did not declare: that is a bug of the suite (a SetupError), never a verdict on the server.

```
verdict       counted as a defect   raised by
FAIL          yes                   registry.fail(name, ...)
IGNORED       yes (a FAIL class)    registry.fail(name, ..., ignored=True)
UNSUPPORTED   no                    registry.unsupported(name, ...)   (a clean 4xx refusal)
LENIENT       no (shown)            registry.lenient(name, ...)
INCONCLUSIVE  no (no verdict)       registry.inconclusive(name, ...)  (an answer that cannot decide)
ERROR         no                    SetupError, or registry.platform_error(...)
```

UNSUPPORTED, LENIENT and INCONCLUSIVE reach the report as a pytest skip whose reason starts
with the class (`skip_reason`); the plugin reads it back (`read_skip`) into a record of that
verdict. None of them is a failure of the run: the exit status counts FAIL (and ERROR) only.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class VerdictClass(str, enum.Enum):
    FAIL = "FAIL"  # a public source says the server is wrong about a feature it offers
    IGNORED = "IGNORED"  # accepted a field and silently did not honour it: a FAIL class
    UNSUPPORTED = "UNSUPPORTED"  # not claimed, or refused cleanly with a 4xx
    LENIENT = "LENIENT"  # accepted a request the spec calls invalid: shown, never a FAIL
    INCONCLUSIVE = "INCONCLUSIVE"  # the answer cannot decide the check: no verdict, never a PASS
    ERROR = "ERROR"  # the suite's setup, or a platform the server does not support


DEFAULT_VERDICTS = frozenset({VerdictClass.FAIL})

PLATFORM_PREFIX = "ERROR/platform: "
# The classes a skip may carry, each recorded as its own verdict, never as a FAIL or a PASS.
SKIP_VERDICTS = (VerdictClass.UNSUPPORTED, VerdictClass.LENIENT, VerdictClass.INCONCLUSIVE)
# The form the report wrote before LENIENT and INCONCLUSIVE had verdicts of their own: a record
# UNSUPPORTED whose message holds the class (read back by `read_skip`).
_LEGACY_SUFFIX = " (not a FAIL; UNSUPPORTED in the report)"


@dataclass(frozen=True)
class SkipVerdict:
    """What a skip reason says: its verdict class, the check that gave it (when named) and the
    message."""

    verdict: VerdictClass
    check: str
    message: str


def skip_reason(verdict: VerdictClass, check: str, message: str) -> str:
    """The skip reason that carries ``verdict`` of ``check`` to the report."""
    return f"{verdict.value}: {check}: {message}" if check else f"{verdict.value}: {message}"


# LENIENT and INCONCLUSIVE only as the prefix `registry` writes; UNSUPPORTED anywhere, as the
# profile's reasons and a few tests' own say it.
_MARKERS = re.compile(r"\b(?:(LENIENT|INCONCLUSIVE): |(UNSUPPORTED)\b(:\s*)?)")
_CHECK = re.compile(r"^([a-z][a-z0-9_.]*): ")
_PYTEST_PREFIX = "Skipped: "


def read_skip(reason: str) -> SkipVerdict | None:
    """The verdict a skip reason carries, or None for a plain skip (not asked for, or nothing
    to judge), which leaves no record. The first class the reason names wins; a LENIENT or
    INCONCLUSIVE reason names its check after the class (`skip_reason`)."""
    text = reason.replace(_LEGACY_SUFFIX, "").strip()
    text = text.removeprefix(_PYTEST_PREFIX)
    found = _MARKERS.search(text)
    if found is None:
        return None
    if found.group(2):  # UNSUPPORTED: the message after its colon, else the whole reason
        message = text[found.end():] if found.group(3) else text
        return SkipVerdict(VerdictClass.UNSUPPORTED, "", message.strip())
    rest = text[found.end():].strip()
    named = _CHECK.match(rest)
    if named is None:
        return SkipVerdict(VerdictClass(found.group(1)), "", rest)
    return SkipVerdict(VerdictClass(found.group(1)), named.group(1), rest[named.end():])
