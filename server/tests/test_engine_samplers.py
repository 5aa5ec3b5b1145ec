"""The per-request sampler chain and the logits processors (logit_bias range; DRY: test_dry.py)."""

from __future__ import annotations

import math

import mlx.core as mx
import pytest

from mlxcel.engine.penalties import build_logits_processors
from mlxcel.engine.sampling import RequestSampler, _p_less, _top_k, _xtc, check_logit_bias
from mlxcel.errors import InvalidRequestError
from mlxcel.generation import SamplingParams

VOCAB = 8


def logprobs(probs: list[float]) -> mx.array:
    return mx.log(mx.array([probs]))


def kept(logits: mx.array) -> list[int]:
    row: list[float] = logits[0].tolist()  # type: ignore[assignment]
    return [i for i, v in enumerate(row) if v != -math.inf]


def test_greedy_takes_the_argmax() -> None:
    sampler = RequestSampler(SamplingParams(temperature=0.0), VOCAB)
    assert sampler(logprobs([0.1, 0.6, 0.3])).item() == 1


def test_same_seed_same_draws_and_other_seed_differs() -> None:
    lp = logprobs([1 / VOCAB] * VOCAB)
    params = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=42)
    draws = [[RequestSampler(params, VOCAB)(lp).item() for _ in range(1)] for _ in range(2)]
    a, b = RequestSampler(params, VOCAB), RequestSampler(params, VOCAB)
    seq_a = [a(lp).item() for _ in range(20)]
    seq_b = [b(lp).item() for _ in range(20)]
    other = RequestSampler(SamplingParams(temperature=1.0, top_k=0, seed=43), VOCAB)
    assert seq_a == seq_b and draws[0] == draws[1]
    assert [other(lp).item() for _ in range(20)] != seq_a


def test_top_k_keeps_k_best() -> None:
    assert kept(_top_k(logprobs([0.1, 0.4, 0.2, 0.3]), 2)) == [1, 3]


def test_p_less_keeps_tokens_above_sum_of_squares() -> None:
    # sum p^2 = 0.25 + 0.09 + 0.04 + 0.0...: threshold 0.38+ keeps only 0.5
    probs = [0.5, 0.3, 0.2]
    threshold = sum(p * p for p in probs)
    expected = [i for i, p in enumerate(probs) if p >= threshold]
    assert kept(_p_less(logprobs(probs))) == expected == [0]
    assert kept(_p_less(logprobs([0.25] * 4))) == [0, 1, 2, 3]


def test_xtc_removes_top_choices_but_the_least_likely_of_them() -> None:
    lp = logprobs([0.4, 0.3, 0.2, 0.1])
    fired = _xtc(lp, threshold=0.15, probability=1.0, key=mx.random.key(0))
    assert kept(fired) == [2, 3]
    never = _xtc(lp, threshold=0.15, probability=0.0, key=mx.random.key(0))
    assert kept(never) == [0, 1, 2, 3]
    single = _xtc(lp, threshold=0.35, probability=1.0, key=mx.random.key(0))
    assert kept(single) == [0, 1, 2, 3]  # one token above the threshold: nothing removed


def test_processors_only_for_fields_set() -> None:
    assert build_logits_processors(SamplingParams()) == []
    assert len(build_logits_processors(SamplingParams(dry_multiplier=0.5,
                                                      presence_penalty=0.5))) == 2


def test_logit_bias_outside_vocabulary_is_rejected() -> None:
    check_logit_bias(SamplingParams(logit_bias={3: 1.0}), VOCAB)
    with pytest.raises(InvalidRequestError):
        check_logit_bias(SamplingParams(logit_bias={VOCAB: 1.0}), VOCAB)
