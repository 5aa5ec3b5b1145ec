"""anthropic_prefill with fake answers: a continuation that goes on with the answer's next word
passes; one that repeats the prefill, answers as without it, or starts elsewhere fails (the
first two IGNORED); an answer too short gives no prefill."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks import anthropic_prefill as ap
from mlxcel_conformance.errors import ConformanceFailure

ANSWER = "Once upon a time, a small robot lived by the sea."


def test_the_prefill_is_the_first_half_of_the_words_as_written() -> None:
    assert ap.prefill_from(ANSWER) == "Once upon a time, a"
    assert ap.prefill_from("  Hello\nthere, friend") == "  Hello"
    assert ap.prefill_from("Hello there") is None
    assert ap.next_word(ANSWER, "Once upon a time, a") == "small"


@pytest.mark.parametrize("continuation", [" small robot lived by the sea.", "small robot",
                                          " small and different after that"])
def test_a_continuation_passes(continuation: str) -> None:
    ap.check_anthropic_prefill(ANSWER, "Once upon a time, a", continuation)


@pytest.mark.parametrize(("continuation", "ignored"), [
    (ANSWER, True),  # the prefill dropped: the same answer again
    ("Once upon a time, a small robot", True),  # a new turn repeating the prefill
    ("Hello! How can I help?", False),  # a reply of its own
    ("", False),
])
def test_a_restarted_turn_fails(continuation: str, ignored: bool) -> None:
    with pytest.raises(ConformanceFailure) as info:
        ap.check_anthropic_prefill(ANSWER, "Once upon a time, a", continuation)
    assert info.value.check == "anthropic_prefill"
    assert info.value.message.startswith("IGNORED: ") is ignored
    assert "docs.anthropic.com/en/api/messages" in info.value.evidence["source"]
