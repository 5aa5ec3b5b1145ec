"""Embeddings (/v1/embeddings, /embedding, /embeddings) and reranking (/v1/rerank and aliases)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mlxcel_conformance.checks.embeddings import (
    check_embedding_body_openai,
    check_embedding_vectors,
    check_rerank_order,
    check_same_vectors,
    decode_base64_vector,
    l2,
)
from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import chat_payload, check_schema, response_of

V1 = "/v1/embeddings"
TEXTS = ["hello world", "the cat sat on the mat"]
QUERY = "What is a panda?"
DOCS = ["hi", "it is a bear",
        "The giant panda is a bear species endemic to China."]
RERANK_PATHS = ("/v1/rerank", "/v1/reranking", "/rerank", "/reranking")


def serves(client: SuiteClient, route: str) -> bool:
    """Whether the target has a model for ``route`` (embeddings or rerank): anything but 501
    to a valid request. Without one, the reference (like llama-server without
    ``--embeddings``) answers 501 naming the flag that enables it."""
    if route == "embeddings":
        return client.probe(route, lambda: client.post(V1, {"input": "probe"}).status_code != 501)
    return client.probe(route, lambda: client.post(
        "/v1/rerank", {"query": "probe", "documents": ["probe"]}).status_code != 501)


def require(client: SuiteClient, route: str) -> None:
    if not serves(client, route):
        pytest.skip(f"UNSUPPORTED: the server has no {route} model (the route answers 501)")


def _post(client: SuiteClient, path: str, payload: dict[str, Any]) -> Any:
    response = client.post(path, payload)
    expect_status(response, 200)
    body = json_body(response)
    check_schema("POST", path, 200, body)
    return body


def openai_vectors(client: SuiteClient, payload: dict[str, Any], n: int) -> list[Any]:
    vectors = check_embedding_body_openai(_post(client, V1, payload), n)
    return vectors


@pytest.mark.conformance(family="embeddings", feature="embeddings.openai.body")
def test_openai_embeddings_are_normalized_and_deterministic(client: SuiteClient) -> None:
    require(client, "embeddings")
    vectors = openai_vectors(client, {"input": [*TEXTS, TEXTS[0]]}, 3)
    check_embedding_vectors(vectors, normalized=True)
    check_same_vectors(vectors[0], vectors[2], "same request")
    again = openai_vectors(client, {"input": TEXTS[0]}, 1)
    check_same_vectors(vectors[0], again[0], "separate requests, different batch")


@pytest.mark.conformance(family="embeddings", feature="embeddings.openai.base64")
def test_base64_encoding_matches_float(client: SuiteClient) -> None:
    require(client, "embeddings")
    floats = openai_vectors(client, {"input": TEXTS[1]}, 1)[0]
    encoded = openai_vectors(client, {"input": TEXTS[1], "encoding_format": "base64"}, 1)[0]
    if not isinstance(encoded, str):
        fail("embedding_base64", "encoding_format base64 must give a string", got=encoded)
    check_same_vectors(floats, decode_base64_vector(encoded), "float vs base64")


@pytest.mark.conformance(family="embeddings", feature="embeddings.openai.token_ids")
def test_token_id_inputs(client: SuiteClient) -> None:
    require(client, "embeddings")
    vectors = openai_vectors(client, {"input": [[5, 6, 7], [8, 9]]}, 2)
    check_embedding_vectors(vectors, normalized=True)
    single = openai_vectors(client, {"input": [5, 6, 7]}, 1)
    check_same_vectors(vectors[0], single[0], "token list vs list of token lists")


@pytest.mark.conformance(family="embeddings", feature="embeddings.native.shape")
def test_native_embedding_shape_and_normalization(client: SuiteClient) -> None:
    require(client, "embeddings")
    reference = openai_vectors(client, {"input": TEXTS[0]}, 1)[0]
    for path in ("/embedding", "/embeddings"):
        body = _post(client, path, {"content": TEXTS[0]})
        if not isinstance(body, list) or len(body) != 1 or body[0].get("index") != 0:
            fail("embedding_body_native", f"{path} answers [{{index, embedding}}] per input",
                 body=str(body)[:300])
        rows = body[0]["embedding"]
        if len(rows) != 1:
            pytest.skip(f"{path}: the server pools nothing (per-token vectors)")
        check_same_vectors(reference, rows[0], f"{path} vs /v1/embeddings")
    raw = _post(client, "/embedding", {"content": TEXTS[0], "embd_normalize": -1})[0]
    vector = raw["embedding"][0]
    norm = l2(vector)
    check_same_vectors(reference, [x / norm for x in vector], "embd_normalize -1, rescaled")


BAD_EMBEDDINGS: dict[str, dict[str, Any]] = {
    "empty_string": {"input": ""},
    "empty_list": {"input": []},
    "input_missing": {"encoding_format": "float"},
    "input_number": {"input": 3.5},
    "bad_encoding": {"input": "x", "encoding_format": "int8"},
    "too_many_tokens": {"input": "word " * 40000},
}


@pytest.mark.conformance(family="embeddings", feature="embeddings.errors", destructive=True)
@pytest.mark.parametrize("case", sorted(BAD_EMBEDDINGS))
def test_embeddings_bad_input_is_400(client: SuiteClient, case: str) -> None:
    require(client, "embeddings")
    status, body = response_of(client.post(V1, BAD_EMBEDDINGS[case]))
    check_error_body_openai(body, status=status, expected=400)
    openai_vectors(client, {"input": "still serving"}, 1)


@pytest.mark.conformance(family="embeddings", feature="embeddings.alongside_generation")
def test_embeddings_alongside_a_generation(client: SuiteClient, model_name: str | None) -> None:
    """An embedding request while a chat completion runs: both answer, neither breaks."""
    require(client, "embeddings")
    results: dict[str, int] = {}

    def chat() -> None:
        payload = chat_payload(model_name, "Tell me a story.", max_tokens=48)
        results["chat"] = client.post("/v1/chat/completions", payload).status_code

    thread = threading.Thread(target=chat)
    thread.start()
    for _ in range(3):
        openai_vectors(client, {"input": TEXTS}, 2)
    thread.join(timeout=120)
    if results.get("chat") != 200:
        fail("embedding_alongside_generation", "the chat completion failed while embeddings "
             "ran", chat_status=results.get("chat"))


@pytest.mark.conformance(family="embeddings", feature="rerank.jina")
@pytest.mark.parametrize("path", RERANK_PATHS)
def test_rerank_envelope_ordered_by_score(client: SuiteClient, path: str) -> None:
    require(client, "rerank")
    body = _post(client, path, {"query": QUERY, "documents": DOCS, "top_n": 2,
                                "return_documents": True})
    results = body.get("results") if isinstance(body, dict) else None
    check_rerank_order(results or [], "relevance_score", len(DOCS), 2)
    for item in results or []:
        if (item.get("document") or {}).get("text") != DOCS[item["index"]]:
            fail("rerank_documents", "return_documents must echo the ranked document",
                 item=item)
    full = _post(client, path, {"query": QUERY, "documents": DOCS})["results"]
    check_rerank_order(full, "relevance_score", len(DOCS), None)
    if [r["index"] for r in full[:2]] != [r["index"] for r in results or []]:
        fail("rerank_order", "top_n must keep the best-scored documents", top=results,
             full=full)


@pytest.mark.conformance(family="embeddings", feature="rerank.tei")
def test_rerank_tei_bare_array(client: SuiteClient) -> None:
    require(client, "rerank")
    body = _post(client, "/rerank", {"query": QUERY, "texts": DOCS, "return_text": True})
    check_rerank_order(body, "score", len(DOCS), None)
    if any(item.get("text") != DOCS[item["index"]] for item in body):
        fail("rerank_documents", "return_text must echo the ranked text", body=body)


BAD_RERANK: dict[str, dict[str, Any]] = {
    "no_documents": {"query": QUERY},
    "empty_documents": {"query": QUERY, "documents": []},
    "both_forms": {"query": QUERY, "documents": DOCS, "texts": DOCS},
    "query_missing": {"documents": DOCS},
    "top_n_zero": {"query": QUERY, "documents": DOCS, "top_n": 0},
}


@pytest.mark.conformance(family="embeddings", feature="rerank.errors", destructive=True)
@pytest.mark.parametrize("case", sorted(BAD_RERANK))
def test_rerank_bad_input_is_400(client: SuiteClient, case: str) -> None:
    require(client, "rerank")
    status, body = response_of(client.post("/v1/rerank", BAD_RERANK[case]))
    check_error_body_openai(body, status=status, expected=400)
