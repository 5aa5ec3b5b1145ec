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
ERROR         no                    SetupError, or registry.platform_error(...)
(inconclusive: no verdict)          registry.inconclusive(...)
```
"""

from __future__ import annotations

import enum


class VerdictClass(str, enum.Enum):
    FAIL = "FAIL"  # a public source says the server is wrong about a feature it offers
    IGNORED = "IGNORED"  # accepted a field and silently did not honour it: a FAIL class
    UNSUPPORTED = "UNSUPPORTED"  # not claimed, or refused cleanly with a 4xx
    LENIENT = "LENIENT"  # accepted a request the spec calls invalid: shown, never a FAIL
    ERROR = "ERROR"  # the suite's setup, or a platform the server does not support


DEFAULT_VERDICTS = frozenset({VerdictClass.FAIL})

# The prefixes of a pytest skip reason that the report reads (plugin.py records a skip whose
# reason holds "UNSUPPORTED" as that verdict; the others it leaves out of the FAIL count).
UNSUPPORTED_PREFIX = "UNSUPPORTED: "
LENIENT_PREFIX = "LENIENT: "
INCONCLUSIVE_PREFIX = "INCONCLUSIVE: "
PLATFORM_PREFIX = "ERROR/platform: "
# Until the report has rows of their own for them, a LENIENT finding and an inconclusive check
# are recorded as UNSUPPORTED (shown, never counted as FAIL, and never a PASS), their message
# starting with their own prefix: the plugin records any skip whose reason says UNSUPPORTED.
SHOWN_AS_UNSUPPORTED = " (not a FAIL; UNSUPPORTED in the report)"
