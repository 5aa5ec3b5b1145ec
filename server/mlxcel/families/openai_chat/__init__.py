"""OpenAI Chat Completions: ``/v1/chat/completions`` (and ``/chat/completions``), its
``input_tokens`` count, and llama-server's ``/apply-template``, which renders a chat request's
messages through the template without generating (the same request model) and answers errors
in llama-server's shape."""

from __future__ import annotations

from .. import Family
from . import apply_template, routes
from .errors import APPLY_TEMPLATE_ERROR_SHAPE

FAMILY = Family(routers=(routes.router, apply_template.router),
                error_shape=APPLY_TEMPLATE_ERROR_SHAPE)
