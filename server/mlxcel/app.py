"""The FastAPI application: the server's own routes and every installed API family
(``families/``), auth, one error handler, engine lifecycle."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from . import __version__, api, limits
from .api.auth import ApiKeyMiddleware
from .api.guard import GuardSettings, RequestGuard
from .api.handlers import install_error_handlers
from .api.sole_model_gate import SoleModelGate
from .api.state import AppState, SoleModel
from .chat.turn import TurnSettings
from .config import ServerConfig
from .engine.worker import Engine, EngineConfig
from .error_shapes import register as register_error_shape
from .families import Family, installed
from .http_server import install_accept_error_limiter
from .memory import trim_after_large_bodies
from .observability import MetricsPortGate, engine_registry


def server_routers() -> list[APIRouter]:
    """The server's own routes (health, models, metrics, cache): every ``router`` defined by a
    module of ``mlxcel.api``."""
    routers = []
    for info in sorted(pkgutil.iter_modules(api.__path__), key=lambda m: m.name):
        router = getattr(importlib.import_module(f"{api.__name__}.{info.name}"), "router", None)
        if isinstance(router, APIRouter):
            routers.append(router)
    return routers


def mount_families() -> list[Family]:
    """Every installed family, its error shape registered (once per process)."""
    found = installed()
    for family in found:
        if family.error_shape is not None:
            register_error_shape(family.error_shape)
    return found


def sole_model(families: list[Family], config: ServerConfig) -> SoleModel | None:
    """The one family's model the config runs alone, with no text model; None: the text
    model."""
    found = [model for family in families if family.sole_model is not None
             and (model := family.sole_model(config)) is not None]
    if len(found) > 1:
        raise ValueError("two families ask to run their model alone")
    return found[0] if found else None


def create_app(config: ServerConfig, engine: Engine | None = None) -> FastAPI:
    """Build the app; the engine (and the model load) starts with the app's lifespan, unless a
    family runs its model alone (the audio-only server loads no text model at all)."""
    engine = engine or Engine(EngineConfig(model=config.model, ctx_size=config.ctx_size,
                                           parallel=config.parallel))
    limits.install(config.limits)
    # --chat-template on the model as it loads: every route that renders or counts sees it.
    engine.when_loaded(TurnSettings.of(config).install)
    families = mount_families()
    state = AppState(config=config, engine=engine, sole_model=sole_model(families, config),
                     health_parts=[f.health for f in families if f.health is not None])

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        install_accept_error_limiter(asyncio.get_running_loop())
        trimmer = asyncio.create_task(trim_after_large_bodies())
        if engine.state == "loading" and not engine.started and state.sole_model is None:
            engine.start()
        try:
            yield
        except Exception as exc:
            # a router's lifespan (an encoder, image or audio model's load) failed: kept for
            # mlxcel-server's one-line report (cli.py), then raised on to uvicorn
            app.state.startup_error = exc
            raise
        finally:
            trimmer.cancel()
            engine.stop()

    app = FastAPI(
        title="mlxcel-server",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    if config.metrics or config.metrics_port:
        state.services.metrics = engine_registry(engine)
    app.state.mlxcel = state
    for router in server_routers() + [r for family in families for r in family.routers]:
        app.include_router(router)
    install_error_handlers(app)
    if state.sole_model is not None:
        served = frozenset().union(*(family.text_model_free for family in families))
        needs = {path: need for family in families for path, need in family.needs.items()}
        app.add_middleware(SoleModelGate, state=state, served=served, needs=needs)
    if config.metrics_port:  # inside the key check: a 404 there needs the key, as before
        app.add_middleware(MetricsPortGate, port=config.metrics_port)
    if config.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key)
    app.add_middleware(RequestGuard, settings=GuardSettings.of(config),  # outermost: first
                       admission=state.admission)
    return app
