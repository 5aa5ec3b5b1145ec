"""What route handlers need from the running app."""

from __future__ import annotations

from dataclasses import dataclass

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
        model = self.engine.model
        return model.name if model is not None else self.config.model

    def require_model(self) -> LoadedModel:
        return self.engine.require_model()


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.mlxcel
    return state
