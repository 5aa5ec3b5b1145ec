"""The ``X-Priority`` request header (high, normal, low) that orders the prefill queue."""

from __future__ import annotations

from fastapi import Request

from ..generation import PRIORITY_RANK, Priority

HEADER = "x-priority"


def request_priority(request: Request) -> Priority:
    """The request's priority; a missing or unknown value is ``normal``."""
    value = request.headers.get(HEADER, "normal").strip().lower()
    if value in PRIORITY_RANK:
        return value  # type: ignore[return-value]
    return "normal"
