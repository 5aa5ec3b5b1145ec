"""Preparing a prompt off the event loop when it may hold media.

On a vision-language model a prompt may need files read, URLs fetched (up to
``--media-fetch-timeout``) and images or video decoded (up to ``--media-decode-timeout``):
that work runs on a worker thread, so the event loop keeps streaming to every other client.
Text models prepare on the loop as before (their media parts are an immediate 400).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool

from ..engine.model import LoadedModel

T = TypeVar("T")


async def prepare_prompt(model: LoadedModel, work: Callable[..., T], *args: Any,
                         **kwargs: Any) -> T:
    if model.vision is None:
        return work(*args, **kwargs)
    return await run_in_threadpool(work, *args, **kwargs)
