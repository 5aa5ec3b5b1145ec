"""``TopAlternatives``: a step's top alternatives as arrays, read as ``TopLogprob`` items."""

from __future__ import annotations

import math

import numpy as np

from mlxcel.generation import TopLogprob
from mlxcel.generation.alternatives import LOGPROB_FLOOR, TopAlternatives, clamp_logprobs


def _piece(token_id: int) -> tuple[str, tuple[int, ...]]:
    text = f"t{token_id}"
    return text, tuple(text.encode())


def test_items_are_made_from_the_arrays_best_first() -> None:
    top = TopAlternatives(np.array([7, 3]), np.array([-0.25, -1.5]), _piece)
    assert len(top) == 2
    assert list(top) == [TopLogprob("t7", -0.25, (116, 55), 7),
                         TopLogprob("t3", -1.5, (116, 51), 3)]
    assert top[1] == TopLogprob("t3", -1.5, (116, 51), 3)
    assert list(top[:1]) == [TopLogprob("t7", -0.25, (116, 55), 7)]
    assert list(top.pairs()) == [(7, -0.25), (3, -1.5)]
    assert all(type(v) is float for _, v in top.pairs())


def test_equal_to_the_same_items_as_a_tuple() -> None:
    top = TopAlternatives(np.array([1]), np.array([-0.5]), _piece)
    items = (TopLogprob("t1", -0.5, (116, 49), 1),)
    assert top == items and items == top
    assert top != (TopLogprob("t1", -0.75, (116, 49), 1),)


def test_clamped_as_rendered() -> None:
    values = clamp_logprobs(np.array([0.5, -1.0, -np.inf, np.nan, -1e6], dtype=np.float32))
    assert values.tolist() == [0.0, -1.0, LOGPROB_FLOOR, LOGPROB_FLOOR, LOGPROB_FLOOR]
    assert not any(math.isnan(v) for v in values.tolist())
