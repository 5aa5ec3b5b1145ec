"""The audio family's settings (``--audio-model``, ``--audio-max-queue``, ``--audio-timeout``),
its section of ``ServerConfig.sections``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import ServerConfig, section
from ...settings.catalog import default_of

SECTION = "audio"


def _d(field: str) -> Any:
    return default_of(SECTION, field)


@dataclass(frozen=True)
class AudioConfig:
    """``model``: a Whisper or Kokoro checkpoint; with it the server is audio-only (no text
    model)."""

    model: str | None = _d("model")
    max_queue: int = _d("max_queue")
    timeout_s: float = _d("timeout_s")

    @classmethod
    def of(cls, config: ServerConfig) -> AudioConfig:
        return section(config, SECTION, cls)
