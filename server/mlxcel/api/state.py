"""What route handlers need from the running app: its config, the engine and the services
beside it, one typed object kept on ``app.state.mlxcel`` (nothing else is kept on the app)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Request

from .. import __version__
from ..config import ServerConfig
from ..engine.model import LoadedModel
from ..engine.worker import Engine
from .guard import Admission

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from ..families.embeddings.encoder_service import EncoderService
    from ..single_worker import SingleWorker

FINGERPRINT = f"fp_mlxcel_{__version__.replace('.', '_')}"


@dataclass
class Services:
    """What runs beside the engine. The metrics registry is made with the app; the encoders and
    the audio and image workers by their routers' lifespans at startup (None where the server
    was started without their model); a family's own services (the Responses store) in
    ``parts``, by the family's name, opened by that family."""

    parts: dict[str, Any] = field(default_factory=dict)
    metrics: CollectorRegistry | None = None
    encoders: EncoderService | None = None
    audio: SingleWorker[Any] | None = None
    images: SingleWorker[Any] | None = None


@dataclass
class AppState:
    config: ServerConfig
    engine: Engine
    services: Services = field(init=False)
    # closed by the bounded shutdown (shutdown.py): then every new request is 503
    admission: Admission = field(default_factory=Admission)

    def __post_init__(self) -> None:
        self.services = Services()

    @property
    def model_name(self) -> str:
        if self.config.alias:
            return self.config.alias
        if self.config.audio_model:
            return audio_model_name(self.config.audio_model)
        model = self.engine.model
        return model.name if model is not None else self.config.model

    def require_model(self) -> LoadedModel:
        return self.engine.require_model()


def audio_model_name(path_or_repo: str) -> str:
    """A local checkpoint's directory name, or the hub id as given."""
    return Path(path_or_repo).name if Path(path_or_repo).exists() else path_or_repo


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.mlxcel
    return state
