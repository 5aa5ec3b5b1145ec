"""Server-Sent Events on top of Starlette's ``StreamingResponse`` (which handles disconnects)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.responses import StreamingResponse

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


# One encoder for every event: ``json.dumps`` with options builds a new one per call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(payload: Any) -> str:
    encoded: str = _ENCODER.encode(payload)
    return encoded


def data_event(payload: dict[str, Any] | str) -> str:
    """One ``data:`` event; a string payload (``[DONE]``) is sent as is."""
    body = payload if isinstance(payload, str) else dumps(payload)
    return f"data: {body}\n\n"


def named_event(name: str, payload: dict[str, Any]) -> str:
    """A typed event whose ``event:`` line names it (Responses, Anthropic)."""
    return f"event: {name}\ndata: {dumps(payload)}\n\n"


def sse_response(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(events, media_type="text/event-stream", headers=SSE_HEADERS)
