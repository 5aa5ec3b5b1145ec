"""Checks on error responses: the HTTP status, and the body shape of the OpenAI and Anthropic
families. The shapes peers get wrong are named in the failure message: mlx-lm answers
`{"error": "<string>"}`, FastAPI/vLLM-style servers `{"detail": ...}`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from typing import Any

from mlxcel_conformance.checks.contract_edges import judge_leniency
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.checks.verdict_policy import VerdictClass
from mlxcel_conformance.errors import Severity

# The error `type` the Anthropic API pairs with each status.
ANTHROPIC_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@check(
    "error_status",
    severity=Severity.HIGH,
    description="the HTTP status is the specified one; a 500 only where the spec documents it",
    verdicts=frozenset({VerdictClass.FAIL, VerdictClass.LENIENT, VerdictClass.UNSUPPORTED}),
)
def check_error_status(status: int, expected: int | Collection[int], *,
                       source: str | None = None, case: str | None = None) -> int:
    """``source``: the public contract that specifies the status for this request; ``case``:
    which bad input was sent (both land in the failure; the defect is the status, whatever
    the case)."""
    allowed = {expected} if isinstance(expected, int) else set(expected)
    problem = status_problem(status, allowed)
    if problem is None:
        return status
    judge_leniency(status, allowed, case)
    fail("error_status", f"{problem} ({case})" if case else problem,
         severity=Severity.CRITICAL if status == 500 else None, source=source,
         status=status, expected=sorted(allowed), defect=f"error_status: {problem}")


def status_problem(status: int, allowed: Collection[int]) -> str | None:
    """What is wrong with answering ``status`` where the API specifies one of ``allowed``
    (None: nothing)."""
    if status in allowed:
        return None
    if status == 500:
        return "HTTP 500 for a client error: the server crashed on input it should reject"
    if status == 422 and 400 in allowed:
        return "HTTP 422 (a framework's validation default) where the API specifies 400"
    if 200 <= status < 300:
        return f"HTTP {status}: the server accepted a request the API rejects"
    return f"HTTP {status}, expected {' or '.join(map(str, sorted(allowed)))}"


# One property in two forms: the error check's bare string and field parity's `error: string`.
BARE_STRING_ERROR = "error_shape: `error` is a string, not an object"


def _decode(name: str, body: Any) -> Any:
    if isinstance(body, bytes):
        body = body.decode("utf-8", errors="replace")
    if isinstance(body, str):
        try:
            return json.loads(body)
        except ValueError:
            fail(name, "the error body is not JSON", body=body)
    return body


def _wrong_envelope(name: str, body: Any, expected: str) -> None:
    if not isinstance(body, Mapping):
        fail(
            name, f"the error body is a JSON {type(body).__name__}, expected {expected}", body=body
        )
    if isinstance(body.get("error"), str):
        fail(name, f"`error` is a bare string (mlx-lm's shape), expected {expected}", body=body,
             defect=BARE_STRING_ERROR)
    if "detail" in body and "error" not in body:
        fail(name, f"FastAPI/vLLM-style {{'detail': ...}} body, expected {expected}", body=body)
    if not isinstance(body.get("error"), Mapping):
        fail(name, f"no `error` object, expected {expected}", body=body)


_OPENAI_SHAPE = '{"error": {"message", "type", "param", "code"}}'


@check(
    "error_body_openai",
    severity=Severity.HIGH,
    description='OpenAI error body {"error": {"message": str, "type": str, "code": ...}}',
)
def check_error_body_openai(
    body: Any, *, status: int | None = None, expected: int | Collection[int] | None = None,
    source: str | None = None, case: str | None = None,
) -> dict[str, Any]:
    """Return the `error` object. With `status` and `expected`, the status is checked first
    (``source`` and ``case`` as in `check_error_status`)."""
    return _openai_like_error("error_body_openai", body, status, expected, source, case)


@check(
    "error_body_llama",
    severity=Severity.HIGH,
    description='llama-server error body {"error": {"code": int, "message": str, "type": str}} '
                "on its native routes (/completion, /tokenize, ...)",
)
def check_error_body_llama(
    body: Any, *, status: int | None = None, expected: int | Collection[int] | None = None,
    source: str | None = None, case: str | None = None,
) -> dict[str, Any]:
    """The OpenAI envelope as llama-server's README documents it for its own routes ("API
    errors"): ``code`` is the HTTP status as an integer there, where OpenAI's is a string."""
    return _openai_like_error("error_body_llama", body, status, expected, source, case)


def _openai_like_error(
    name: str, body: Any, status: int | None, expected: int | Collection[int] | None,
    source: str | None, case: str | None,
) -> dict[str, Any]:
    if status is not None and expected is not None:
        check_error_status(status, expected, source=source, case=case)
    body = _decode(name, body)
    _wrong_envelope(name, body, _OPENAI_SHAPE)
    error = body["error"]
    if not isinstance(error.get("message"), str) or not error["message"]:
        fail(name, "error.message is not a non-empty string", body=body)
    if not isinstance(error.get("type"), str):
        fail(name, "error.type is not a string", body=body)
    if "code" not in error:
        fail(name, "error.code is missing (null is allowed)", severity=Severity.MEDIUM, body=body)
    code = error["code"]
    # openai-openapi's Error schema: code is a nullable string (an integer is not one);
    # llama-server's README gives its native routes the HTTP status as an integer code
    native = name == "error_body_llama" and isinstance(code, int) and not isinstance(code, bool)
    if code is not None and not isinstance(code, str) and not native:
        # one defect whatever the status the code repeats (400, 401, ...)
        fail(name, f"error.code is {type(code).__name__} {code!r}, not a string or null",
             severity=Severity.MEDIUM, body=body,
             defect=f"{name}: error.code is {type(code).__name__}, not a string or null")
    if error.get("param") is not None and not isinstance(error["param"], str):
        fail(name, "error.param is not a string or null", severity=Severity.LOW, body=body)
    return dict(error)


_ANTHROPIC_SHAPE = '{"type": "error", "error": {"type", "message"}}'


@check(
    "error_body_anthropic",
    severity=Severity.HIGH,
    description='Anthropic error body {"type": "error", "error": {"type": str, "message": str}}',
)
def check_error_body_anthropic(
    body: Any, *, status: int | None = None, expected: int | Collection[int] | None = None,
    source: str | None = None, case: str | None = None,
) -> dict[str, Any]:
    """Return the `error` object. With `status`, its error type is matched against it."""
    name = "error_body_anthropic"
    if status is not None and expected is not None:
        check_error_status(status, expected, source=source, case=case)
    body = _decode(name, body)
    _wrong_envelope(name, body, _ANTHROPIC_SHAPE)
    if body.get("type") != "error":
        fail(name, f"type is {body.get('type')!r}, not 'error'", body=body)
    error = body["error"]
    if not isinstance(error.get("type"), str) or not error["type"]:
        fail(name, "error.type is not a non-empty string", body=body)
    if not isinstance(error.get("message"), str):
        fail(name, "error.message is not a string", body=body)
    if "request_id" in body and not isinstance(body["request_id"], (str, type(None))):
        fail(name, "request_id is not a string", severity=Severity.LOW, body=body)
    wanted = ANTHROPIC_ERROR_TYPES.get(status) if status is not None else None
    if wanted is not None and error["type"] != wanted:
        fail(
            name,
            f"HTTP {status} carries error.type {error['type']!r}; the API pairs it with {wanted!r}",
            severity=Severity.MEDIUM,
            body=body,
        )
    return dict(error)
