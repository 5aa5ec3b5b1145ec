"""What route handlers need from the running app: its config, the engine and the services
beside it, one typed object kept on ``app.state.mlxcel`` (nothing else is kept on the app)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fastapi import Request

from .. import __version__
from ..config import ServerConfig
from ..engine.loaded_model import LoadedModel
from ..engine.worker import Engine
from .guard import Admission

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

FINGERPRINT = f"fp_mlxcel_{__version__.replace('.', '_')}"


@dataclass
class Services:
    """What runs beside the engine. The metrics registry is made with the app; each family's own
    services (the Responses store, the encoders, the audio and image workers) sit in ``parts``
    by the family's name, put there and closed by that family's router lifespan (absent where
    the server was started without their model)."""

    parts: dict[str, Any] = field(default_factory=dict)
    metrics: CollectorRegistry | None = None


@dataclass(frozen=True)
class SoleModel:
    """A family's model that the server runs instead of the text model (the audio-only server):
    no engine starts, ``name`` is the model clients see, ``health`` answers ``/health`` (status
    and body), and ``refusal`` words the 501 of a route this server does not serve (method,
    path)."""

    name: str
    health: Callable[[AppState], tuple[int, dict[str, Any]]]
    refusal: Callable[[AppState, str, str], str]


@dataclass
class AppState:
    config: ServerConfig
    engine: Engine
    services: Services = field(init=False)
    # closed by the bounded shutdown (shutdown.py): then every new request is 503
    admission: Admission = field(default_factory=Admission)
    # set by the app from the families: the model run alone, and what families add to /health
    sole_model: SoleModel | None = None
    health_parts: list[Callable[[AppState], dict[str, Any]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.services = Services()

    @property
    def model_name(self) -> str:
        if self.config.alias:
            return self.config.alias
        if self.sole_model is not None:
            return self.sole_model.name
        model = self.engine.model
        return model.name if model is not None else self.config.model

    def require_model(self) -> LoadedModel:
        return self.engine.require_model()


def app_state(request: Request) -> AppState:
    state: AppState = request.app.state.mlxcel
    return state
