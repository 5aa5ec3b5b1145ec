"""Unit tests of the llama-server native adapter: DRY penalties, stop types, prompt forms."""

from __future__ import annotations

import pytest

from mlxcel.engine.dry import DryParams, dry_penalties
from mlxcel.engine.request import Finished
from mlxcel.protocol.native import stop_type_of


def test_dry_penalises_the_token_that_would_extend_a_repeat() -> None:
    # ... 1 2 3 9 ... 1 2 3 -> the token after the earlier "1 2 3" (9) is penalised.
    history = [1, 2, 3, 9, 5, 1, 2, 3]
    out = dry_penalties(history, DryParams(multiplier=0.8, base=2.0, allowed_length=2),
                        frozenset())
    assert set(out) == {9}
    assert out[9] == pytest.approx(0.8 * 2.0 ** (3 - 2))


def test_dry_short_repeats_and_breakers_are_free() -> None:
    params = DryParams(multiplier=1.0, allowed_length=3)
    assert dry_penalties([1, 2, 9, 1, 2], params, frozenset()) == {}
    # a breaker token inside the run stops the match before it reaches allowed_length
    assert dry_penalties([7, 1, 2, 9, 7, 1, 2], params, frozenset({1})) == {}


def test_dry_disabled_by_multiplier_or_window() -> None:
    history = [1, 2, 3, 9, 1, 2, 3]
    assert dry_penalties(history, DryParams(multiplier=0.0), frozenset()) == {}
    assert dry_penalties(history, DryParams(multiplier=1.0, penalty_last_n=0), frozenset()) == {}


@pytest.mark.parametrize(
    ("finished", "expected"),
    [
        (Finished("length", 3, 8), "limit"),
        (Finished("stop", 3, 2), "eos"),
        (Finished("stop", 3, 2, stop_string="."), "word"),
        (Finished("cancelled", 3, 1), "none"),
    ],
)
def test_stop_type(finished: Finished, expected: str) -> None:
    assert stop_type_of(finished) == expected
