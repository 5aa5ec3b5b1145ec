"""Checks on embeddings (OpenAI and llama-server native shapes) and reranking (Jina/Cohere
envelope, TEI array)."""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Sequence
from typing import Any

from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

NORM_TOLERANCE = 1e-3
SAME_TOLERANCE = 1e-5


def l2(vector: Sequence[float]) -> float:
    return math.sqrt(sum(x * x for x in vector))


def _is_vector(value: Any) -> bool:
    return (isinstance(value, list) and bool(value)
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value))


@check("embedding_body_openai", severity=Severity.HIGH,
       description="/v1/embeddings body: object list, one vector per input in order, usage")
def check_embedding_body_openai(body: Any, n_inputs: int) -> list[Any]:
    if not isinstance(body, dict) or body.get("object") != "list":
        fail("embedding_body_openai", "the body must be an object with object: list", body=body)
    data = body.get("data")
    if not isinstance(data, list) or len(data) != n_inputs:
        fail("embedding_body_openai", f"data must hold {n_inputs} entries", body=body)
    if [d.get("index") for d in data] != list(range(n_inputs)):
        fail("embedding_body_openai", "data indexes must be 0..n-1 in input order", body=body)
    if any(d.get("object") != "embedding" for d in data):
        fail("embedding_body_openai", "every entry must have object: embedding", body=body)
    usage = body.get("usage") or {}
    if not (is_int(usage.get("prompt_tokens")) and is_int(usage.get("total_tokens"))):
        fail("embedding_body_openai", "usage.prompt_tokens and total_tokens must be integers",
             usage=usage)
    return [d.get("embedding") for d in data]


@check("embedding_vectors", severity=Severity.HIGH,
       description="Embedding vectors: non-empty numbers, one dimension for all, unit length "
       "when normalized")
def check_embedding_vectors(vectors: list[Any], normalized: bool) -> None:
    if not all(_is_vector(v) for v in vectors):
        fail("embedding_vectors", "each embedding must be a non-empty list of numbers",
             sample=str(vectors)[:300])
    if len({len(v) for v in vectors}) != 1:
        fail("embedding_vectors", "embeddings differ in dimension",
             dims=[len(v) for v in vectors])
    if normalized:
        norms = [l2(v) for v in vectors]
        if any(abs(n - 1.0) > NORM_TOLERANCE for n in norms):
            fail("embedding_vectors", "normalized embeddings must have unit Euclidean length",
                 norms=norms)


@check("embedding_deterministic", severity=Severity.HIGH,
       description="Identical inputs give identical embeddings")
def check_same_vectors(a: Sequence[float], b: Sequence[float], where: str) -> None:
    if len(a) != len(b) or any(abs(x - y) > SAME_TOLERANCE for x, y in zip(a, b, strict=False)):
        fail("embedding_deterministic", f"identical inputs gave different vectors ({where})",
             first=list(a[:8]), second=list(b[:8]))


def decode_base64_vector(text: str) -> list[float]:
    raw = base64.b64decode(text)
    return list(struct.unpack(f"<{len(raw) // 4}f", raw))


@check("rerank_order", severity=Severity.HIGH,
       description="Rerank results are ordered by descending score, indexes valid and unique, "
       "cut to top_n")
def check_rerank_order(results: list[Any], score_key: str, n_docs: int,
                       top_n: int | None) -> None:
    if not isinstance(results, list):
        fail("rerank_order", "results must be an array", results=results)
    want = min(n_docs, top_n) if top_n else n_docs
    if len(results) != want:
        fail("rerank_order", f"{len(results)} results, expected {want}", results=results)
    indexes = [r.get("index") for r in results]
    if len(set(indexes)) != len(indexes) or not all(
            is_int(i) and 0 <= i < n_docs for i in indexes):
        fail("rerank_order", "indexes must be unique document positions", indexes=indexes)
    scores = [r.get(score_key) for r in results]
    if not all(isinstance(s, (int, float)) and not isinstance(s, bool) for s in scores):
        fail("rerank_order", f"every result needs a numeric {score_key}", results=results)
    if scores != sorted(scores, reverse=True):
        fail("rerank_order", "results are not ordered by descending score", scores=scores)
