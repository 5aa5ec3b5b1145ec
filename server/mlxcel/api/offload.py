"""The event loop does I/O only: request preparation runs on a bounded pool of worker threads.

Parsing and validating a body, rendering a chat template, tokenizing, compiling a grammar,
preparing sampler tables and rendering large answers all grow with what the client sent; on
the event loop each would hold every other client (``/health`` included) for as long as it
runs. ``off_loop`` runs such work on at most ``--prepare-threads`` threads at once (the rest
wait their turn without blocking the loop); the work itself is bounded by the request limits
(``limits.py``), so a thread is never held for long either.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from fastapi import Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel

from .. import limits
from ..memory import note_body
from ..protocol.body import parse_body

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)

# One limiter per event loop (test clients each run their own loop).
_POOLS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = \
    weakref.WeakKeyDictionary()


def _pool() -> anyio.CapacityLimiter:
    loop = asyncio.get_running_loop()
    pool = _POOLS.get(loop)
    if pool is None:
        pool = anyio.CapacityLimiter(max(1, limits.active().prepare_threads))
        _POOLS[loop] = pool
    return pool


async def off_loop(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``work(*args, **kwargs)`` on the preparation pool."""
    return await anyio.to_thread.run_sync(functools.partial(work, *args, **kwargs),
                                          limiter=_pool())


async def parse_request(request: Request, model: type[M]) -> M:
    """The request's JSON body as ``model`` (read on the loop, parsed and validated off it)."""
    raw = await request.body()
    note_body(len(raw))
    return await off_loop(parse_body, model, raw)


def _render(payload: Any) -> bytes:
    return bytes(JSONResponse(payload).body)


async def json_response(work: Callable[..., Any], *args: Any, **kwargs: Any) -> Response:
    """Compute and render a JSON answer off the loop (for answers that grow with the input,
    e.g. ``/tokenize`` with pieces)."""
    def compute() -> bytes:
        return _render(work(*args, **kwargs))

    body = await off_loop(compute)
    return Response(content=body, media_type="application/json")
