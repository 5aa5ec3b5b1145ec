"""POST /v1/embeddings (OpenAI) and POST /embedding, /embeddings (llama-server's native shape).

The router's lifespan loads the encoder models named by ``--embedding-model`` and
``--rerank-model`` at startup (a failed load stops the server) and keeps them on
the app's ``services.parts["embeddings"]`` for this module and ``rerank.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import Response

from ...api.offload import json_response, off_loop, parse_request
from ...api.state import AppState
from ...errors import InvalidRequestError
from .embeddings_request import (
    EmbeddingsRequest,
    NativeEmbeddingRequest,
    embed,
    input_token_lists,
    native_embeddings_body,
    openai_embeddings_body,
)
from .encoder_service import PART, EncoderService, encoder_service


@asynccontextmanager
async def _encoders(app: FastAPI) -> AsyncIterator[None]:
    state: AppState = app.state.mlxcel
    service = EncoderService.from_config(state.config)
    state.services.parts[PART] = service
    try:
        yield
    finally:
        state.services.parts.pop(PART, None)
        service.close()


router = APIRouter(lifespan=_encoders)


@router.post("/v1/embeddings")
async def create_embeddings(request: Request) -> Response:
    body = await parse_request(request, EmbeddingsRequest)
    service = encoder_service(request)
    model = service.require_embedding()
    if model.pooling == "none":
        raise InvalidRequestError("Pooling type 'none' is not OpenAI-compatible: use "
                                  "/embeddings for per-token vectors.")
    if body.dimensions is not None and body.dimensions != model.dimensions:
        raise InvalidRequestError(
            f"dimensions {body.dimensions} is not supported: the model's embeddings have "
            f"{model.dimensions} dimensions.", param="dimensions")
    inputs = await off_loop(input_token_lists, model, body.input, "input")
    vectors = await service.run(lambda: embed(model, inputs, model.pooling, 2))
    n_tokens = sum(len(ids) for ids in inputs)
    return await json_response(openai_embeddings_body, model.name, vectors, n_tokens,
                               body.encoding_format)


@router.post("/embedding")
@router.post("/embeddings")
async def create_native_embeddings(request: Request) -> Response:
    body = await parse_request(request, NativeEmbeddingRequest)
    service = encoder_service(request)
    model = service.require_embedding()
    param = "content" if body.content is not None else "input"
    inputs = await off_loop(input_token_lists, model, body.inputs(), param)
    norm = 2 if body.embd_normalize is None else body.embd_normalize
    vectors = await service.run(lambda: embed(model, inputs, model.pooling, norm))
    return await json_response(native_embeddings_body, vectors)
