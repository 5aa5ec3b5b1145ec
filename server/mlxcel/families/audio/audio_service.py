"""The audio worker: one Whisper or Kokoro model on a ``SingleWorker`` (one request at a time,
503 past ``--audio-max-queue``, 504 past ``--audio-timeout``), kept in the app's
``services.parts["audio"]``."""

from __future__ import annotations

from pathlib import Path

from fastapi import Request

from ...config import ServerConfig
from ...single_worker import SingleWorker, app_worker
from .audio_config import SECTION, AudioConfig
from .checkpoints import AudioModel, load_audio_model

AudioService = SingleWorker[AudioModel]
PART = SECTION


def start_audio_service(config: ServerConfig) -> AudioService | None:
    """The worker of ``--audio-model``, its checkpoint loaded; None without the flag."""
    audio = AudioConfig.of(config)
    path_or_repo = audio.model
    if not path_or_repo:
        return None
    return SingleWorker.start(lambda: load_audio_model(path_or_repo), kind="audio",
                              timeout_flag="--audio-timeout", max_queue=audio.max_queue,
                              timeout_s=audio.timeout_s)


def audio_service(request: Request) -> AudioService | None:
    return app_worker(request, PART)


def audio_model_name(path_or_repo: str) -> str:
    """A local checkpoint's directory name, or the hub id as given."""
    return Path(path_or_repo).name if Path(path_or_repo).exists() else path_or_repo
