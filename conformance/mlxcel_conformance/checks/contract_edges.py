"""Where the public contract ends: the answers that are not a FAIL although they are not what the
reference sends (docs/conformance/verdicts.md, "Where the contract ends").

- A valid request refused cleanly (a 4xx with a JSON error body) that names an optional field of
  the request is a combination the server does not offer: UNSUPPORTED, not FAIL (llama-server's
  "logprobs is not supported with tools + stream", vllm-mlx's 422 on ``response_format``). A
  refusal that names nothing, or only the fields every request carries, stays a FAIL.
- A 5xx whose body says the server's kernel needs another platform (vllm-mlx's Metal-only
  kernels on Linux: MLX's "[metal_kernel] No GPU back-end", or Metal/CUDA named as missing) is
  ERROR/platform: the suite ran the server where it does not run, which judges nothing.
- A request the public API calls invalid (it documents 400) that the server accepts is LENIENT:
  shown, never a FAIL. Only bad-input statuses count; a missing key answered 200 (401), an unknown
  id answered 200 (404) are defects whatever their status.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping
from typing import Any

from mlxcel_conformance.checks.registry import lenient, platform_error, unsupported
from mlxcel_conformance.profiles import Profile

# Fields every request of its family carries: a refusal naming only these refuses the request
# itself, not a combination.
CORE_FIELDS = frozenset({"model", "messages", "prompt", "input", "max_tokens", "stream",
                         "temperature", "max_output_tokens", "system", "content"})
# Statuses that are not a refusal of what was asked (auth, routing, size, back-pressure).
NOT_A_REFUSAL = frozenset({401, 403, 404, 405, 408, 413, 429})
# The statuses a public API documents for a request body it calls invalid.
BAD_INPUT = frozenset({400, 422})


def refused_field(payload: Mapping[str, Any] | None, status: int, text: str) -> str | None:
    """The optional request field a clean 4xx refusal names, or None."""
    if payload is None or not 400 <= status < 500 or status in NOT_A_REFUSAL:
        return None
    try:
        json.loads(text)
    except ValueError:
        return None  # not an error body: not a clean refusal
    for key in payload:
        if key not in CORE_FIELDS and re.search(rf"\b{re.escape(str(key))}\b", text):
            return str(key)
    return None


# What a server says when a kernel it needs exists only on another platform.
PLATFORM_MESSAGE = re.compile(r"metal_kernel|no gpu back-?end|metal is not available|"
                       r"requires? (?:a )?(?:metal|cuda|gpu)|not compiled with cuda", re.I)


def judge_refusal(path: str, payload: Mapping[str, Any] | None, status: int, text: str) -> None:
    """UNSUPPORTED when the server refused cleanly a combination it does not offer;
    ERROR/platform when it failed for want of a platform it does not support here."""
    if status >= 500 and PLATFORM_MESSAGE.search(text):
        platform_error("http_status", f"POST {path}: HTTP {status}: "
                       + " ".join(text.split())[:200])
    field = refused_field(payload, status, text)
    if field is not None:
        unsupported("http_status", f"POST {path}: HTTP {status} refusing {field!r}: "
                    + " ".join(text.split())[:200])


def judge_leniency(status: int, expected: int | Collection[int], case: str | None) -> None:
    """LENIENT when the server accepted (2xx) a request the public API calls invalid."""
    allowed = {expected} if isinstance(expected, int) else set(expected)
    if 200 <= status < 300 and allowed and allowed <= BAD_INPUT:
        lenient("error_status", f"HTTP {status} for a request the API rejects with "
                f"{' or '.join(map(str, sorted(allowed)))}" + (f" ({case})" if case else ""))


def skip_documented(profile: Profile, case: str) -> None:
    """Under a peer's profile its documented values are valid: a bad-input case built on one
    is not sent there (UNSUPPORTED, naming where the peer documents it)."""
    where = profile.documented(case)
    if where is not None:
        unsupported("error_status", f"{case} is valid for this server: {where}")
