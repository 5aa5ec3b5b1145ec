"""The robustness family, slow clients (opt-in with ``--robustness``; checks/backpressure.py
and checks/robustness.py say what is judged): streams whose client never reads, and bodies
trickled a byte at a time, while ``/health`` is probed."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mlxcel_conformance.checks.backpressure import (
    check_slot_freed_on_close,
    check_stream_memory_bounded,
)
from mlxcel_conformance.checks.robustness import check_health_within_budget
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.health_probe import HealthProbe, idle_latency, server_rss_bytes
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.robustness_plugin import note_evidence
from mlxcel_conformance.slow_readers import Trickler, close_sockets, open_unread_streams
from mlxcel_conformance.target import Target

# The issue that asked for these (4 never-reading n_probs-2048 streams) and its bounds.
UNREAD_STREAMS = 4
UNREAD_WINDOW_S = 10.0
RSS_BOUND_BYTES = 256 * 1024 * 1024
SLOT_FREE_S = 1.0
# 50 trickled bodies, small enough for a shared CI machine; the full size (4,200, past
# a 4,096-descriptor limit) and how to measure it are in docs/limits.md.
TRICKLED = 50
TRICKLE_WINDOW_S = 8.0


def _unread_request(profile: Profile, model: str | None) -> tuple[str, dict[str, Any]]:
    """The widest stream a claimed family offers: llama-server's ``n_probs``, else chat
    ``top_logprobs``."""
    if profile.claims("llama-native"):
        return "/completion", {"prompt": "Write a very long story.", "n_predict": 4096,
                               "stream": True, "n_probs": 2048}
    if profile.claims("chat"):
        body: dict[str, Any] = {"messages": [{"role": "user", "content": "Write a long story."}],
                                "max_tokens": 4096, "stream": True, "logprobs": True,
                                "top_logprobs": 20}
        return "/v1/chat/completions", {**body, "model": model} if model else body
    pytest.skip(f"UNSUPPORTED: profile {profile.name} claims no streaming text route")


def _busy_slots(client: SuiteClient) -> int:
    slots = client.get("/slots").json()
    return sum(1 for slot in slots if isinstance(slot, dict) and slot.get("is_processing"))


@pytest.mark.conformance(family="robustness", feature="robustness.stream_backpressure")
def test_never_reading_clients_leave_the_server_bounded(
        target: Target, client: SuiteClient, profile: Profile, model_name: str | None,
        budget_ms: float, request: pytest.FixtureRequest) -> None:
    path, body = _unread_request(profile, model_name)
    checks = ["health_within_budget", "stream_memory_bounded", "slot_freed_on_close"]
    request.node.mlxcel_checks = checks
    idle = idle_latency(target.base_url)
    pid = request.config.getoption("--server-pid") or target.pid
    before = server_rss_bytes(pid) if pid else None
    socks = open_unread_streams(target.base_url, target.auth_headers, path, body,
                                UNREAD_STREAMS)
    try:
        with HealthProbe(target.base_url) as watching:
            time.sleep(UNREAD_WINDOW_S)
        after = server_rss_bytes(pid) if pid else None
    finally:
        close_sockets(socks)
    closed = time.monotonic()
    busy = _busy_slots(client) if profile.claims("llama-native") else 0
    while busy and time.monotonic() - closed < SLOT_FREE_S:
        time.sleep(0.05)
        busy = _busy_slots(client)
    grown = after - before if after is not None and before is not None else None
    note_evidence(request.config, "robustness.stream_backpressure", {
        "health": watching.stats().to_evidence(), "idle": idle.to_evidence(),
        "route": path, "streams": UNREAD_STREAMS, "window_s": UNREAD_WINDOW_S,
        "rss_grown_mb": None if grown is None else round(grown / 2**20),
        "busy_slots_after_close": busy})
    check_health_within_budget(watching.stats(), budget_ms,
                               f"{UNREAD_STREAMS} never-reading streams", idle,
                               control=watching.control_stats())
    if grown is not None:
        check_stream_memory_bounded(grown, RSS_BOUND_BYTES, UNREAD_STREAMS, UNREAD_WINDOW_S)
    check_slot_freed_on_close(busy, time.monotonic() - closed)


@pytest.mark.conformance(family="robustness", feature="robustness.trickled_bodies")
def test_trickled_bodies_leave_health_answering(
        target: Target, budget_ms: float, request: pytest.FixtureRequest) -> None:
    request.node.mlxcel_checks = ["health_within_budget"]
    idle = idle_latency(target.base_url)
    with Trickler(target.base_url, target.auth_headers, TRICKLED) as trickler, \
            HealthProbe(target.base_url) as watching:
        time.sleep(TRICKLE_WINDOW_S)
    note_evidence(request.config, "robustness.trickled_bodies", {
        "health": watching.stats().to_evidence(), "idle": idle.to_evidence(),
        "trickled": TRICKLED, "ended_by_server": trickler.ended})
    check_health_within_budget(watching.stats(), budget_ms,
                               f"{TRICKLED} bodies trickled one byte a second", idle,
                               control=watching.control_stats())


@pytest.fixture
def budget_ms(pytestconfig: pytest.Config) -> float:
    return float(pytestconfig.getoption("--health-budget-ms"))
