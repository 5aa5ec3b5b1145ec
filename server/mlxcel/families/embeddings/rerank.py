"""POST /v1/rerank, /v1/reranking, /rerank, /reranking: a cross-encoder scores each
(query, document) pair; the answer is ordered by descending score."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from ...api.offload import off_loop, parse_request
from .encoder_service import encoder_service
from .rerank_models import RerankRequest, rerank_body, rerank_pairs

router = APIRouter()


@router.post("/v1/rerank")
@router.post("/v1/reranking")
@router.post("/rerank")
@router.post("/reranking")
async def rerank(request: Request) -> JSONResponse:
    body = await parse_request(request, RerankRequest)
    service = encoder_service(request)
    model = service.require_rerank()
    docs = body.document_texts()
    pairs = await off_loop(rerank_pairs, model, body.query, docs)
    scores = await service.run(lambda: [model.score(ids, types) for ids, types in pairs])
    n_tokens = sum(len(ids) for ids, _ in pairs)
    return JSONResponse(rerank_body(body, model.name, docs, scores, n_tokens))
