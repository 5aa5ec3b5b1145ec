"""Tests for the scheduling checks that read the server's own account (``/slots``, ``/health``):
X-Priority judged on who holds the freed slot, and the queue state a 529 probe is judged in."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.engine_checks import check_priority_order
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.held_streams import QueueState

SLOTS: list[dict[str, Any]] = [{"id": 0, "is_processing": True, "params": {"n_predict": 3001}}]


@pytest.mark.parametrize("admitted", [["high"], ["high", "low"]])
def test_high_holding_the_slot_passes(admitted: list[str]) -> None:
    check_priority_order(admitted, SLOTS)


@pytest.mark.parametrize(("admitted", "says"), [
    (["low"], "the low-priority request took the freed slot"),
    ([], "neither queued request took the slot"),
])
def test_low_first_or_nobody_fails(admitted: list[str], says: str) -> None:
    with pytest.raises(ConformanceFailure) as failed:
        check_priority_order(admitted, SLOTS)
    assert failed.value.check == "priority_order" and says in failed.value.message
    assert failed.value.evidence["slots"] == SLOTS  # the server's account is the evidence


@pytest.mark.parametrize(("depth", "capacity", "full"), [
    (16, 16, True), (15, 16, False), (None, 16, False), (16, None, False)])
def test_queue_state_is_full_only_when_the_server_says_so(depth: int | None,
                                                          capacity: int | None,
                                                          full: bool) -> None:
    assert QueueState((1, 2), depth, capacity).full is full
