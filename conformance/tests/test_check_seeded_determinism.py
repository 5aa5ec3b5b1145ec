"""seeded_determinism judges the copies of one seeded request that shared a batch; the lone run
is evidence only (a near-tie may flip between a lone sequence and a batch row on real
numerics, docs/chat.md)."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.engine_checks import check_seeded_determinism
from mlxcel_conformance.errors import ConformanceFailure


def test_copies_that_agree_pass_whatever_the_lone_run_says() -> None:
    check_seeded_determinism("Once upon a time", ["Once upon a day", "Once upon a day"])


def test_copies_that_differ_fail_with_all_three_texts() -> None:
    with pytest.raises(ConformanceFailure, match="copy 1") as info:
        check_seeded_determinism("a", ["a", "b"])
    assert info.value.evidence["alone"] == "a" and info.value.evidence["other"] == "b"
