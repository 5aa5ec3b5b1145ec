"""The audio worker: one Whisper model on a ``SingleWorker`` (one request at a time, 503 past
``--audio-max-queue``, 504 past ``--audio-timeout``)."""

from __future__ import annotations

from fastapi import Request

from ..single_worker import SingleWorker
from .whisper import WhisperModel, load_whisper

DEFAULT_MAX_QUEUE = 4
DEFAULT_TIMEOUT_S = 300.0
AudioService = SingleWorker[WhisperModel]


def start_audio_service(path_or_repo: str, *, max_queue: int, timeout_s: float) -> AudioService:
    return SingleWorker.start(lambda: load_whisper(path_or_repo), kind="audio",
                              timeout_flag="--audio-timeout", max_queue=max_queue,
                              timeout_s=timeout_s)


def audio_service(request: Request) -> AudioService | None:
    service: AudioService | None = getattr(request.app.state, "mlxcel_audio", None)
    return service
