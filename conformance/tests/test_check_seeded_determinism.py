"""seeded_determinism judges the copies of one seeded request that shared a batch; the lone run
is evidence only (a near-tie may flip between a lone sequence and a batch row on real
numerics, docs/chat.md). seed_after_cache_hit judges the statement about the prompt cache: a
cold prefill repeats token for token whatever ran before, a cache hit only moves last bits."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.engine_checks import (
    check_seed_after_cache_hit,
    check_seeded_determinism,
)
from mlxcel_conformance.errors import ConformanceFailure


def test_copies_that_agree_pass_whatever_the_lone_run_says() -> None:
    check_seeded_determinism("Once upon a time", ["Once upon a day", "Once upon a day"])


def test_copies_that_differ_fail_with_all_three_texts() -> None:
    with pytest.raises(ConformanceFailure, match="copy 1") as info:
        check_seeded_determinism("a", ["a", "b"])
    assert info.value.evidence["alone"] == "a" and info.value.evidence["other"] == "b"


# seed_after_cache_hit: the cold run, the run after another prompt filled the cache (a hit), and
# the run with cache_prompt false after it; (token ids, logprobs) each.
COLD = ([5, 9, 2, 7], [-0.5, -1.25, -0.75, -2.0])


def test_runs_equal_to_the_cold_one_pass() -> None:
    assert check_seed_after_cache_hit(COLD, COLD, COLD) is None


def test_a_cache_hit_that_flips_a_near_tie_after_last_bits_drift_passes() -> None:
    hit = ([5, 9, 3, 1], [-0.5 + 2.4e-6, -1.25, -0.76, -1.0])
    assert check_seed_after_cache_hit(COLD, hit, COLD) == 2


def test_a_cold_prefill_that_differs_after_another_request_fails() -> None:
    with pytest.raises(ConformanceFailure, match="cache_prompt false"):
        check_seed_after_cache_hit(COLD, COLD, ([5, 9, 2, 8], COLD[1]))
    with pytest.raises(ConformanceFailure, match="cache_prompt false"):
        check_seed_after_cache_hit(COLD, COLD, ([5, 9], COLD[1][:2]))  # cut short


def test_a_cache_hit_whose_logprobs_moved_more_than_last_bits_fails() -> None:
    hit = ([5, 9, 2, 7], [-0.5, -1.0, -0.75, -2.0])  # same tokens, another computation
    with pytest.raises(ConformanceFailure, match="not a last-bits difference"):
        check_seed_after_cache_hit(COLD, hit, COLD)


def test_no_token_probabilities_fails() -> None:
    with pytest.raises(ConformanceFailure, match="no token probabilities"):
        check_seed_after_cache_hit(([], []), ([], []), ([], []))
