"""Running an engine request from a route: to completion, or as a stream, and cancelling it
when the client goes away."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import Request

from ..engine.handle import RequestHandle
from ..errors import ServerBusy, ServerError
from ..generation import EngineEvent, Finished, PromptProgress, TokenDelta, TokenLogprob

DISCONNECT_POLL_S = 0.05


@dataclass
class Collected:
    text: str
    finished: Finished
    logprobs: list[TokenLogprob] = field(default_factory=list)
    # The deltas as they came, for a reader that needs their tokens (reasoning counts).
    deltas: list[TokenDelta] = field(default_factory=list)


async def _watch_disconnect(request: Request, handle: RequestHandle) -> None:
    while not handle.finished.is_set():
        if await request.is_disconnected():
            handle.cancel()
            return
        await asyncio.sleep(DISCONNECT_POLL_S)


@contextlib.asynccontextmanager
async def cancel_on_disconnect(request: Request, handle: RequestHandle) -> AsyncIterator[None]:
    """While inside, a client that goes away cancels ``handle`` (polled every
    ``DISCONNECT_POLL_S``); leaving before it finished cancels it too."""
    watcher = asyncio.create_task(_watch_disconnect(request, handle))
    try:
        yield
    finally:
        if not handle.finished.is_set():
            handle.cancel()
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher


async def watched_events(request: Request, handle: RequestHandle) -> AsyncIterator[EngineEvent]:
    """The engine's events of a request answered whole, up to its ``Finished``; a client that
    leaves cancels it. A failed generation raises ``ServerError``, one a shutdown stopped
    ``ServerBusy`` (not an answer that merely looks short)."""
    async with cancel_on_disconnect(request, handle):
        async for event in handle.events():
            if isinstance(event, Finished):
                if event.reason == "error":
                    raise ServerError(f"generation failed: {event.error}")
                if event.reason == "cancelled" and handle.server_reason:
                    raise ServerBusy(handle.server_reason, code="shutting_down")
            yield event
            if isinstance(event, Finished):
                return
    raise ServerError("generation ended without a result")


async def collect(request: Request, handle: RequestHandle) -> Collected:
    """Wait for the whole generation; a client that leaves cancels it."""
    deltas: list[TokenDelta] = []
    logprobs: list[TokenLogprob] = []
    async for event in watched_events(request, handle):
        if isinstance(event, TokenDelta):
            deltas.append(event)
            logprobs.extend(event.logprobs)
        else:
            text = "".join(delta.text for delta in deltas)
            return Collected(text, event, logprobs, deltas)
    raise ServerError("generation ended without a result")


def server_stop_error(handles: list[RequestHandle]) -> dict[str, Any] | None:
    """The ``data: {"error": ...}`` payload for a stream the server stopped (a shutdown)
    after its final chunk: a client sees a clean end, then why it came early (openai-python
    raises ``APIError`` on it). None when the server stopped none of ``handles``."""
    reason = next((h.server_reason for h in handles if h.server_reason), None)
    if reason is None:
        return None
    return {"error": {"message": reason, "type": "server_error", "code": "shutting_down"}}


async def stream_events(handle: RequestHandle) -> AsyncIterator[EngineEvent]:
    """The engine's events; closing the iterator (client gone) cancels the generation."""
    try:
        async for event in handle.events():
            yield event
    finally:
        if not handle.finished.is_set():
            handle.cancel()


async def stream_batches(handle: RequestHandle) -> AsyncIterator[list[EngineEvent]]:
    """``stream_events`` in the groups that arrived together, so that a route can write them
    to the socket at once."""
    try:
        async for batch in handle.batches():
            yield batch
    finally:
        if not handle.finished.is_set():
            handle.cancel()


async def stream_batches_with_progress(
        handle: RequestHandle) -> AsyncIterator[list[EngineEvent | PromptProgress]]:
    """``stream_batches`` with the ``PromptProgress`` events of a request that asked for them
    (``report_progress``)."""
    try:
        async for batch in handle.batches_with_progress():
            yield batch
    finally:
        if not handle.finished.is_set():
            handle.cancel()
