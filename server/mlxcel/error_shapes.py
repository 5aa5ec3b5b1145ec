"""Which error shape a route answers in. An API family that answers errors in its own shape
(Anthropic's on ``/v1/messages``, llama-server's on its native routes) declares an
``ErrorShape`` in its ``Family`` (``families/``); the app registers them, and the one error
renderer (``api/handlers.py``) asks this registry, never naming a family. A route no family
claims answers in OpenAI's shape."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import MlxcelError

# An error rendered for one family: its JSON body and its HTTP status.
Render = Callable[[MlxcelError], tuple[dict[str, Any], int]]


@dataclass(frozen=True)
class ErrorShape:
    paths: frozenset[str]
    render: Render


_BY_PATH: dict[str, Render] = {}


def register(shape: ErrorShape) -> None:
    """Claim ``shape.paths``; two families may not claim one path."""
    for path in shape.paths:
        if _BY_PATH.setdefault(path, shape.render) is not shape.render:
            raise ValueError(f"two error shapes claim {path}")


def render_error(error: MlxcelError, path: str) -> tuple[dict[str, Any], int]:
    render = _BY_PATH.get(path)
    return render(error) if render else (error.to_openai(), error.status)
