"""Anthropic's error shape, used on the Messages routes: ``{"type": "error", "error": {"type":
..., "message": ...}}`` with Anthropic's error type for each status. A full prefill queue is
529 ``overloaded_error``, as Anthropic's API signals back-pressure (the OpenAI routes say 503)."""

from __future__ import annotations

from typing import Any

from ...error_shapes import ErrorShape
from ...errors import MlxcelError, QueueFull

ANTHROPIC_PATHS = frozenset(
    {"/v1/messages", "/messages", "/v1/messages/count_tokens", "/messages/count_tokens"}
)
ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    408: "timeout_error",
    413: "request_too_large",
    429: "rate_limit_error",
    503: "overloaded_error",
    529: "overloaded_error",
}


def anthropic_status(error: MlxcelError) -> int:
    return 529 if isinstance(error, QueueFull) else error.status


def anthropic_error(error: MlxcelError) -> tuple[dict[str, Any], int]:
    status = anthropic_status(error)
    kind = ANTHROPIC_TYPES.get(status, "api_error")
    return {"type": "error", "error": {"type": kind, "message": error.message}}, status


ANTHROPIC_ERROR_SHAPE = ErrorShape(ANTHROPIC_PATHS, anthropic_error)
