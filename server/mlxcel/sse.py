"""Server-Sent Events on top of Starlette's ``StreamingResponse`` (which handles disconnects).

A stream's events are encoded on the event loop, and writing one to a socket whose buffers
still have room does not suspend the route: a batch of large events (``n_probs: 2048`` is
~200 kB a token) would otherwise be encoded and written back to back, and every other client,
``/health`` included, would wait that long. ``sse_response`` lets the loop run once after
every ``YIELD_EVERY_BYTES`` of a stream's output.
"""

from __future__ import annotations

import asyncio
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


YIELD_EVERY_BYTES = 64 * 1024


async def _taking_turns(events: AsyncIterator[str]) -> AsyncIterator[str]:
    """``events``, letting the event loop run after each ``YIELD_EVERY_BYTES`` of them."""
    since = 0
    # closed here, not left to the garbage collector: a route's ``finally`` (which cancels its
    # generation when the client leaves) runs as soon as the response ends
    try:
        async for event in events:
            yield event
            since += len(event)
            if since >= YIELD_EVERY_BYTES:
                since = 0
                await asyncio.sleep(0)
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def sse_response(events: AsyncIterator[str]) -> StreamingResponse:
    return StreamingResponse(_taking_turns(events), media_type="text/event-stream",
                             headers=SSE_HEADERS)
