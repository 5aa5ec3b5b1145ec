"""The encoder worker: the loaded embedding and rerank models, run one call at a time on a
thread of their own so the event loop and the generation thread never wait on them.

The service is built at startup by the embeddings router's lifespan and kept in the app's
``services.parts["embeddings"]`` (api/state.py); a model that fails to load stops the server's
startup.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

from fastapi import Request

from ...config import ServerConfig
from ...errors import NotImplementedRoute, ServerBusy
from ...startup import installed
from .encoder_config import SECTION, EncoderConfig
from .encoder_model import EncoderModel, load_encoder

log = logging.getLogger("mlxcel.embedding")
T = TypeVar("T")
MAX_PENDING = 64
PART = SECTION


def _extra_hint() -> str:
    if installed("mlx_embeddings"):
        return ""
    return (" Encoder models need the 'embeddings' extra, which is not installed: "
            "pip install 'mlxcel[embeddings]'.")


@dataclass
class EncoderService:
    embedding: EncoderModel | None = None
    rerank: EncoderModel | None = None
    _executor: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="mlxcel-encoder"))
    _pending: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def from_config(cls, config: ServerConfig) -> EncoderService:
        service = cls()
        encoders = EncoderConfig.of(config)
        if encoders.embedding_model:
            service.embedding = load_encoder(encoders.embedding_model, pooling=encoders.pooling)
            log.info("embedding model %s loaded (pooling %s)", service.embedding.name,
                     service.embedding.pooling)
        if encoders.rerank_model:
            service.rerank = load_encoder(encoders.rerank_model, reranker=True)
            log.info("rerank model %s loaded", service.rerank.name)
        return service

    def require_embedding(self) -> EncoderModel:
        if self.embedding is None:
            raise NotImplementedRoute(
                "Embeddings are not enabled: start the server with --embedding-model (or "
                "MLXCEL_EMBEDDING_MODEL) to serve /v1/embeddings, /embedding and /embeddings."
                + _extra_hint()
            )
        return self.embedding

    def require_rerank(self) -> EncoderModel:
        if self.rerank is None:
            raise NotImplementedRoute(
                "Reranking is not enabled: start the server with --rerank-model (or "
                "MLXCEL_RERANK_MODEL) to serve /v1/rerank, /v1/reranking, /rerank and /reranking."
                + _extra_hint()
            )
        return self.rerank

    async def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the encoder thread; 503 when too many calls are already waiting."""
        with self._lock:
            if self._pending >= MAX_PENDING:
                raise ServerBusy("The encoder queue is full. Please try again later.")
            self._pending += 1
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        finally:
            with self._lock:
                self._pending -= 1

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def encoder_service(request: Request) -> EncoderService:
    service: EncoderService | None = request.app.state.mlxcel.services.parts.get(PART)
    return service if service is not None else EncoderService()
