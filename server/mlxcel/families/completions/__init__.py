"""OpenAI legacy Completions: ``/v1/completions`` (a raw prompt, OpenAI's shape)."""

from __future__ import annotations

from .. import Family
from . import routes

FAMILY = Family(routers=(routes.router,))
