"""The FastAPI application: routers of each family, auth, one error handler, engine lifecycle."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from . import __version__
from .api import chat, completions, health, models, tokenize
from .api.auth import ApiKeyMiddleware
from .api.handlers import install_error_handlers
from .api.state import AppState
from .config import ServerConfig
from .engine.worker import Engine, EngineConfig

ROUTERS = (chat.router, completions.router, models.router, health.router, tokenize.router)


def create_app(config: ServerConfig, engine: Engine | None = None) -> FastAPI:
    """Build the app; the engine (and the model load) starts with the app's lifespan."""
    engine = engine or Engine(EngineConfig(model=config.model, ctx_size=config.ctx_size))

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if engine.state == "loading" and not engine.started:
            engine.start()
        yield
        engine.stop()

    app = FastAPI(
        title="mlxcel-server",
        version=__version__,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.mlxcel = AppState(config=config, engine=engine)
    for router in ROUTERS:
        app.include_router(router)
    install_error_handlers(app)
    if config.api_key:
        app.add_middleware(ApiKeyMiddleware, api_key=config.api_key)
    return app
