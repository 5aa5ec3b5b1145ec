"""Encoder models: embeddings (OpenAI's ``/v1/embeddings``, llama-server's ``/embedding``) and
rerank (``/v1/rerank`` and its aliases), served by the encoder models the router's lifespan
loads. llama-server's native paths among them answer errors in its shape."""

from __future__ import annotations

from .. import Family
from . import rerank, routes
from .encoder_config import SECTION, EncoderConfig
from .errors import EMBEDDINGS_ERROR_SHAPE

FAMILY = Family(routers=(routes.router, rerank.router), error_shape=EMBEDDINGS_ERROR_SHAPE,
                settings={SECTION: EncoderConfig})
