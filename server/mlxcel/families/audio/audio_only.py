"""The audio-only server: with ``--audio-model`` the audio family's model runs alone, with no
text model (``api.state.SoleModel``). Its ``/health`` reports the audio worker, and every route
it does not serve answers 501 naming the checkpoint it loaded and what it serves."""

from __future__ import annotations

from typing import Any

from ...api.state import AppState, SoleModel
from ...config import ServerConfig
from .audio_config import AudioConfig
from .audio_service import PART, AudioService, audio_model_name
from .checkpoints import KINDS


def audio_only_server(config: ServerConfig) -> SoleModel | None:
    """The audio model run alone; None without ``--audio-model``."""
    model = AudioConfig.of(config).model
    if not model:
        return None
    return SoleModel(name=audio_model_name(model), health=audio_health, refusal=refusal)


def _worker(state: AppState) -> AudioService | None:
    service: AudioService | None = state.services.parts.get(PART)
    return service


def audio_health(state: AppState) -> tuple[int, dict[str, Any]]:
    """Ready once its worker has loaded the Whisper or Kokoro model."""
    service = _worker(state)
    if service is None:
        return 503, {"status": "loading model"}
    audio = {"queue_depth": service.queue_depth, "max_queue": service.max_queue,
             "timeout_s": service.timeout_s}
    return 200, {"status": "ok", "model": state.model_name, "audio": audio}


def refusal(state: AppState, method: str, path: str) -> str:
    """The 501 message of a route the audio-only server does not serve (the lifespan has loaded
    the checkpoint before any request, so its kind is known)."""
    service = _worker(state)
    kind = KINDS[service.model.kind] if service is not None else None
    label, served = (kind.label, kind.served) if kind else ("audio", "the audio routes")
    return (
        f"{method} {path} is not served: this is an audio-only server that loaded the {label} "
        f"checkpoint {state.model_name}. It serves {served} (and the aliases without /v1), "
        "GET /v1/models and GET /health; start mlxcel-server without --audio-model for the "
        "text routes."
    )
