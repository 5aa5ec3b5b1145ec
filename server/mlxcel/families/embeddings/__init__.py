"""Encoder models: embeddings (OpenAI's ``/v1/embeddings``, llama-server's ``/embedding``) and
rerank (``/v1/rerank`` and its aliases), served by the encoder models the router's lifespan
loads."""

from __future__ import annotations

from .. import Family
from . import rerank, routes

FAMILY = Family(routers=(routes.router, rerank.router))
