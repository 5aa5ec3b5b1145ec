"""The images family's settings (``--image-model``, ``--image-max-queue``, ``--image-timeout``),
its section of ``ServerConfig.sections``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import ServerConfig, section
from ...settings.catalog import default_of

SECTION = "images"


def _d(field: str) -> Any:
    return default_of(SECTION, field)


@dataclass(frozen=True)
class ImageConfig:
    """``model``: a Z-Image checkpoint served beside the text model (None: the routes 501)."""

    model: str | None = _d("model")
    max_queue: int = _d("max_queue")
    timeout_s: float = _d("timeout_s")

    @classmethod
    def of(cls, config: ServerConfig) -> ImageConfig:
        return section(config, SECTION, cls)
