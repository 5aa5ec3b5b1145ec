"""The embeddings family's settings (``--embedding-model``, ``--rerank-model``, ``--pooling``),
its section of ``ServerConfig.sections``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import ServerConfig, section
from ...settings.catalog import default_of

SECTION = "embeddings"


def _d(field: str) -> Any:
    return default_of(SECTION, field)


@dataclass(frozen=True)
class EncoderConfig:
    """The encoder models to load at startup (None: their routes 501)."""

    embedding_model: str | None = _d("embedding_model")
    rerank_model: str | None = _d("rerank_model")
    pooling: str | None = _d("pooling")

    @classmethod
    def of(cls, config: ServerConfig) -> EncoderConfig:
        return section(config, SECTION, cls)
