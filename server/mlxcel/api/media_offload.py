"""Preparing a prompt off the event loop.

Rendering the chat template, tokenizing and compiling a grammar grow with the request; on a
vision-language model a prompt may also need files read, URLs fetched (up to
``--media-fetch-timeout``) and images or video decoded (up to ``--media-decode-timeout``).
All of it runs on the preparation pool (``offload.py``), so the event loop keeps serving
every other client.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..engine.loaded_model import LoadedModel
from .offload import off_loop

T = TypeVar("T")


async def prepare_prompt(model: LoadedModel, work: Callable[..., T], *args: Any,
                         **kwargs: Any) -> T:
    del model  # every model's preparation runs off the loop now
    return await off_loop(work, *args, **kwargs)
