"""The FastAPI application: routers of each family, auth, one error handler, engine lifecycle."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI

from . import __version__, api, families, limits
from .api.auth import ApiKeyMiddleware
from .api.guard import GuardSettings, RequestGuard
from .api.handlers import install_error_handlers
from .api.state import AppState
from .audio.gate import AudioOnlyGate
from .config import ServerConfig
from .engine.worker import Engine, EngineConfig
from .error_shapes import ErrorShape
from .error_shapes import register as register_error_shape
from .http_server import install_accept_error_limiter
from .memory import trim_after_large_bodies
from .observability import engine_registry


def family_routers() -> list[APIRouter]:
    """Every ``router`` defined by a module of ``mlxcel.api``: one module per API family, found
    by name, so adding a family never edits this file. A module's ``error_shape`` (its family's
    error body on the paths it claims) is registered on the way."""
    routers = []
    packages = [api] + [importlib.import_module(f"{families.__name__}.{info.name}")
                        for info in sorted(pkgutil.iter_modules(families.__path__),
                                           key=lambda m: m.name)]
    modules = [f"{package.__name__}.{info.name}" for package in packages
               for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name)]
    for name in modules:
        module = importlib.import_module(name)
        shape = getattr(module, "error_shape", None)
        if isinstance(shape, ErrorShape):
            register_error_shape(shape)
        router = getattr(module, "router", None)
        if isinstance(router, APIRouter):
            routers.append(router)
    return routers


def create_app(config: ServerConfig, engine: Engine | None = None) -> FastAPI:
    """Build the app; the engine (and the model load) starts with the app's lifespan."""
    engine = engine or Engine(EngineConfig(model=config.model, ctx_size=config.ctx_size))
    limits.install(config.limits)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        install_accept_error_limiter(asyncio.get_running_loop())
        trimmer = asyncio.create_task(trim_after_large_bodies())
        # An audio-only server (--audio-model) loads no text model at all.
        if engine.state == "loading" and not engine.started and not config.audio_model:
            engine.start()
        try:
            yield
        finally:  # also when a router's lifespan (an image or audio model's load) fails
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
    state = AppState(config=config, engine=engine)
    if config.metrics:
        state.services.metrics = engine_registry(engine)
    app.state.mlxcel = state
    for router in family_routers():
        app.include_router(router)
    install_error_handlers(app)
    if config.audio_model:
        app.add_middleware(AudioOnlyGate, model_name=app.state.mlxcel.model_name)
    if config.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key)
    app.add_middleware(RequestGuard, settings=GuardSettings.of(config))  # outermost: first
    return app
