"""checks/backpressure.py: what each check accepts and refuses."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.backpressure import (
    check_slot_freed_on_close,
    check_stream_memory_bounded,
)
from mlxcel_conformance.errors import ConformanceFailure

MB = 1024 * 1024


def test_memory_growth_within_the_bound_passes() -> None:
    check_stream_memory_bounded(40 * MB, 256 * MB, 4, 10.0)


def test_memory_growth_past_the_bound_fails_naming_it() -> None:
    with pytest.raises(ConformanceFailure, match="4080 MB"):
        check_stream_memory_bounded(4080 * MB, 256 * MB, 4, 10.0)


def test_a_slot_still_busy_after_close_fails() -> None:
    check_slot_freed_on_close(0, 0.2)
    with pytest.raises(ConformanceFailure, match="2 slots still processing"):
        check_slot_freed_on_close(2, 1.0)
