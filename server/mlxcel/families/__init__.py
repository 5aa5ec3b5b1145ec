"""The API families, one package each: a family brings its request models, their conversion to
the neutral ``GenerationRequest``, the rendering of results and events into its own JSON or SSE,
its routes and its error shape. Families are told apart by the routes and wire dialect they
serve (``docs/design.md``, "API families").

Each package exports ``FAMILY``, a ``Family``; the app mounts every package found here by name
(``installed()``), so adding a family edits no shared module. Families never import each other
and shared code never names one (import-linter contracts in ``pyproject.toml``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter

from ..api.state import AppState, SoleModel
from ..config import ServerConfig
from ..error_shapes import ErrorShape


@dataclass(frozen=True)
class Family:
    """What one API family declares to the app."""

    routers: tuple[APIRouter, ...]
    # the error body on the paths it claims; None: OpenAI's shape
    error_shape: ErrorShape | None = None
    # Paths whose own handler answers on a server without a text model (an audio-only server):
    # it serves them, or its own 501 names what they need.
    text_model_free: frozenset[str] = frozenset()
    # Path -> a sentence naming what the route needs, added to the audio-only server's 501.
    needs: Mapping[str, str] = field(default_factory=dict)
    # The family's model run alone, with no text model, where the config asks for it (the
    # audio-only server); None: the server runs the text model.
    sole_model: Callable[[ServerConfig], SoleModel | None] | None = None
    # Keys the family adds to /health's body (its worker's queue), from the running app.
    health: Callable[[AppState], dict[str, Any]] | None = None
    # Its sections of ``ServerConfig.sections``: section name -> the dataclass that reads it.
    settings: Mapping[str, type[Any]] = field(default_factory=dict)


def installed() -> list[Family]:
    """Every family package under ``mlxcel.families``, in name order."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        family = getattr(module, "FAMILY", None)
        if not isinstance(family, Family):
            raise TypeError(f"{module.__name__} exports no FAMILY")
        found.append(family)
    return found
