"""Anthropic Messages: ``/v1/messages`` and ``/v1/messages/count_tokens`` (and their aliases
without ``/v1``), answering errors in Anthropic's shape."""

from __future__ import annotations

from .. import Family
from . import routes
from .errors import ANTHROPIC_ERROR_SHAPE

FAMILY = Family(routers=(routes.router,), error_shape=ANTHROPIC_ERROR_SHAPE)
