"""logprobs_match_sampled_token names what is wrong: no logprobs at all, or tokens that do not
spell the answer."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.engine_checks import check_logprobs_match_sampled_token
from mlxcel_conformance.errors import ConformanceFailure


def _entry(token: str, logprob: float) -> dict[str, object]:
    return {"token": token, "logprob": logprob,
            "top_logprobs": [{"token": token, "logprob": logprob}]}


def test_tokens_that_spell_the_answer_pass() -> None:
    check_logprobs_match_sampled_token([_entry("Hi", -0.1), _entry("!", -0.2)], "Hi!",
                                       greedy=True)


def test_an_answer_without_logprobs_says_so() -> None:
    with pytest.raises(ConformanceFailure, match="carries no logprobs content"):
        check_logprobs_match_sampled_token([], "Hi!", greedy=True)


def test_tokens_that_spell_something_else_fail() -> None:
    with pytest.raises(ConformanceFailure, match="do not spell the generated content"):
        check_logprobs_match_sampled_token([_entry("Ho", -0.1)], "Hi!", greedy=True)
