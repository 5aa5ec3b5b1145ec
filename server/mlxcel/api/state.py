"""What route handlers need from the running app."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fastapi import Request

from .. import __version__
from ..config import ServerConfig
from ..engine.model import LoadedModel
from ..engine.worker import Engine

FINGERPRINT = f"fp_mlxcel_{__version__.replace('.', '_')}"


@dataclass
class AppState:
    config: ServerConfig
    engine: Engine

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
