"""Running an engine request from a route: to completion, or as a stream, and cancelling it
when the client goes away."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from fastapi import Request

from ..engine.handle import RequestHandle
from ..errors import ServerError
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


async def collect(request: Request, handle: RequestHandle) -> Collected:
    """Wait for the whole generation; a client that leaves cancels it."""
    watcher = asyncio.create_task(_watch_disconnect(request, handle))
    deltas: list[TokenDelta] = []
    logprobs: list[TokenLogprob] = []
    try:
        async for event in handle.events():
            if isinstance(event, TokenDelta):
                deltas.append(event)
                logprobs.extend(event.logprobs)
            else:
                if event.reason == "error":
                    raise ServerError(f"generation failed: {event.error}")
                text = "".join(delta.text for delta in deltas)
                return Collected(text, event, logprobs, deltas)
    finally:
        if not handle.finished.is_set():
            handle.cancel()
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    raise ServerError("generation ended without a result")


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
