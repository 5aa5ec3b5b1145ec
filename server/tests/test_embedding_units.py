"""Unit tests of pooling, normalization, rerank ordering and encoder loading (bundled fixtures)."""

from __future__ import annotations

import numpy as np
import pytest

from mlxcel.bundled import bundled_model_path
from mlxcel.errors import ContextLengthExceeded, InvalidRequestError
from mlxcel.families.embeddings.embeddings_request import embed, input_token_lists
from mlxcel.families.embeddings.encoder_model import EncoderModel, load_encoder
from mlxcel.families.embeddings.pooling import normalize, pool
from mlxcel.families.embeddings.rerank_models import RerankRequest, ranked, rerank_body

STATES = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, -6.0]], dtype=np.float32)


def test_pooling_modes() -> None:
    assert pool(STATES, "mean").tolist() == pytest.approx([3.0, 0.0])
    assert pool(STATES, "cls").tolist() == [1.0, 2.0]
    assert pool(STATES, "last").tolist() == [5.0, -6.0]
    assert pool(STATES, "none").shape == (3, 2)


@pytest.mark.parametrize(("mode", "norm"), [(1, 7.0), (2, 5.0), (3, (27 + 64) ** (1 / 3))])
def test_normalize_p_norms(mode: int, norm: float) -> None:
    vector = np.array([3.0, -4.0], dtype=np.float32)
    assert normalize(vector, mode).tolist() == pytest.approx((vector / norm).tolist())


def test_normalize_none_maxabs_and_zero() -> None:
    vector = np.array([3.0, -4.0], dtype=np.float32)
    assert normalize(vector, -1).tolist() == [3.0, -4.0]
    assert normalize(vector, 0).tolist() == pytest.approx([24570.0, -32760.0])
    assert normalize(np.zeros(2, dtype=np.float32), 2).tolist() == [0.0, 0.0]


def test_ranked_orders_by_score_then_index_and_cuts() -> None:
    assert ranked([0.1, 0.9, 0.5, 0.9], None) == [(1, 0.9), (3, 0.9), (2, 0.5), (0, 0.1)]
    assert ranked([0.1, 0.9, 0.5], 2) == [(1, 0.9), (2, 0.5)]


def test_tei_scores_are_sigmoid_unless_raw() -> None:
    request = RerankRequest(query="q", texts=["a", "b"])
    body = rerank_body(request, "m", ["a", "b"], [0.0, 2.0], 4)
    assert [item["index"] for item in body] == [1, 0]
    assert body[1]["score"] == pytest.approx(0.5)
    raw = rerank_body(RerankRequest(query="q", texts=["a"], raw_scores=True), "m", ["a"], [2.0], 2)
    assert raw[0]["score"] == 2.0


@pytest.fixture(scope="module")
def embedder() -> EncoderModel:
    return load_encoder(str(bundled_model_path("bert-tiny-embed")))


def test_fixture_embeddings_are_unit_and_deterministic(embedder: EncoderModel) -> None:
    inputs = input_token_lists(embedder, ["hello world", "hello world"], "input")
    a, b = embed(embedder, inputs, "mean", 2)
    assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)
    assert a.tolist() == b.tolist()


def test_input_errors(embedder: EncoderModel) -> None:
    with pytest.raises(InvalidRequestError):
        input_token_lists(embedder, "", "input")
    with pytest.raises(InvalidRequestError):
        input_token_lists(embedder, [10**6], "input")
    with pytest.raises(ContextLengthExceeded):
        input_token_lists(embedder, "word " * 500, "input")


def test_reranker_needs_a_classification_head() -> None:
    with pytest.raises(ValueError, match="not a sequence-classification"):
        load_encoder(str(bundled_model_path("bert-tiny-embed")), reranker=True)
    reranker = load_encoder(str(bundled_model_path("bert-tiny-rerank")), reranker=True)
    score = reranker.score(*reranker.encode_pair("What is a panda?", "it is a bear"))
    assert isinstance(score, float)
