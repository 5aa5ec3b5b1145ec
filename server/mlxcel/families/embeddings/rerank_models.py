"""Rerank requests and responses: the Jina/Cohere envelope for ``documents`` and the TEI bare
array for ``texts``, both ordered by descending score and cut to ``top_n``."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ...errors import ContextLengthExceeded, InvalidRequestError
from ...protocol.types import Int, Omittable
from .encoder_model import EncoderModel

MAX_DOCUMENTS = 256


class DocumentObject(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    text: str


class RerankRequest(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    query: str
    # Jina's and Cohere's rerank APIs and TEI's /rerank type these without null.
    documents: Omittable[list[str | DocumentObject]] = None
    texts: Omittable[list[str]] = None
    top_n: Omittable[Int] = Field(default=None, ge=1)
    return_documents: Omittable[bool] = None
    return_text: Omittable[bool] = None
    raw_scores: Omittable[bool] = None
    model: Omittable[str] = None

    @property
    def tei(self) -> bool:
        return self.texts is not None

    def document_texts(self) -> list[str]:
        if (self.documents is None) == (self.texts is None):
            raise InvalidRequestError("Send exactly one of 'documents' (Jina/Cohere) or "
                                      "'texts' (TEI).", param="documents")
        param = "texts" if self.tei else "documents"
        raw = self.texts if self.texts is not None else self.documents or []
        docs = [d if isinstance(d, str) else d.text for d in raw]
        if not docs:
            raise InvalidRequestError(f"'{param}' must not be empty.", param=param)
        if len(docs) > MAX_DOCUMENTS:
            raise InvalidRequestError(f"at most {MAX_DOCUMENTS} documents per request.",
                                      param=param)
        if not self.query:
            raise InvalidRequestError("'query' must not be empty.", param="query")
        return docs


def rerank_pairs(model: EncoderModel, query: str, docs: list[str]
                 ) -> list[tuple[list[int], list[int]]]:
    pairs = [model.encode_pair(query, doc) for doc in docs]
    for index, (ids, _) in enumerate(pairs):
        if len(ids) > model.max_tokens:
            raise ContextLengthExceeded(
                f"query plus document {index} is {len(ids)} tokens, more than the rerank "
                f"model's maximum of {model.max_tokens}.", param="documents",
                n_prompt_tokens=len(ids), n_ctx=model.max_tokens)
    return pairs


def ranked(scores: list[float], top_n: int | None) -> list[tuple[int, float]]:
    order = sorted(enumerate(scores), key=lambda item: (-item[1], item[0]))
    return order[:top_n] if top_n else order


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def rerank_body(request: RerankRequest, model_name: str, docs: list[str], scores: list[float],
                n_tokens: int) -> Any:
    if request.tei:
        # TEI: sigmoid scores unless raw_scores; a bare array.
        out = []
        for index, score in ranked(scores, request.top_n):
            item: dict[str, Any] = {"index": index,
                                    "score": score if request.raw_scores else _sigmoid(score)}
            if request.return_text:
                item["text"] = docs[index]
            out.append(item)
        return out
    results = []
    for index, score in ranked(scores, request.top_n):
        entry: dict[str, Any] = {"index": index, "relevance_score": score}
        if request.return_documents:
            entry["document"] = {"text": docs[index]}
        results.append(entry)
    return {"model": model_name, "object": "list", "results": results,
            "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens}}
