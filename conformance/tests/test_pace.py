"""The suite's waits scale with the pace it measures: a fast target keeps the 60 s floors, a slow
one gets MARGIN times what the work takes, and ``--request-timeout`` wins outright."""

from __future__ import annotations

import math

from mlxcel_conformance import pace
from mlxcel_conformance.target import Target


def test_waits_follow_the_measured_pace() -> None:
    fast, slow = pace.Pace(480.0), pace.Pace(2.0)
    assert fast.request_timeout_s == pace.FLOOR_S
    assert slow.request_timeout_s == pace.MARGIN * pace.LONGEST_REQUEST_TOKENS / 2.0
    assert slow.seconds_for(1024) > slow.seconds_for(64) > pace.FLOOR_S
    assert pace.Pace(2.0, request_timeout_override=30.0).request_timeout_s == 30.0


def test_an_unreachable_target_keeps_the_floors() -> None:
    measured = pace.measure(Target("http://127.0.0.1:9"))  # the discard port: refused
    assert math.isinf(measured.tokens_per_s) and pace.current() is measured
    assert measured.request_timeout_s == pace.FLOOR_S
    pace.measure(Target("http://127.0.0.1:9"), 5.0)
    assert pace.current().request_timeout_s == 5.0
    pace._current[0] = pace.UNMEASURED


def test_the_self_started_fixture_is_not_probed() -> None:
    # a probe of the discard port would fail too; not probing is what leaves inf and no wait
    assert math.isinf(pace.measure(Target("http://127.0.0.1:9"), probe=False).tokens_per_s)
    pace._current[0] = pace.UNMEASURED


def test_plain_answers_are_shorter_on_a_slow_target() -> None:
    assert pace.answer_tokens(32) == 32  # unmeasured: the fixture's lengths
    pace._current[0] = pace.Pace(5.0)
    try:
        assert pace.answer_tokens(32) == pace.SLOW_ANSWER_TOKENS
        assert pace.answer_tokens(4) == 4
    finally:
        pace._current[0] = pace.UNMEASURED
