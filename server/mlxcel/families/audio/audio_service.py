"""The audio worker: one Whisper or Kokoro model on a ``SingleWorker`` (one request at a time,
503 past ``--audio-max-queue``, 504 past ``--audio-timeout``), kept in
the app's ``services.audio``."""

from __future__ import annotations

from fastapi import Request

from ...config import ServerConfig
from ...single_worker import SingleWorker, WorkerName, app_worker
from .checkpoints import AudioModel, load_audio_model

AudioService = SingleWorker[AudioModel]
STATE_ATTR: WorkerName = "audio"


def start_audio_service(config: ServerConfig) -> AudioService | None:
    """The worker of ``--audio-model``, its checkpoint loaded; None without the flag."""
    path_or_repo = config.audio_model
    if not path_or_repo:
        return None
    return SingleWorker.start(lambda: load_audio_model(path_or_repo), kind="audio",
                              timeout_flag="--audio-timeout", max_queue=config.audio_max_queue,
                              timeout_s=config.audio_timeout_s)


def audio_service(request: Request) -> AudioService | None:
    return app_worker(request, STATE_ATTR)
