"""The robustness family: hostile requests, each run while ``/health`` is probed (opt-in with
``--robustness``; see checks/robustness.py for what is judged and why it is fair to any
server). An input whose route belongs to a family the profile does not claim is not sent; a
check with nothing left to send is UNSUPPORTED."""

from __future__ import annotations

import time

import pytest

from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.checks.robustness import (
    BUSY,
    check_answered_in_time,
    check_health_within_budget,
    check_no_orphaned_work,
    check_no_server_error,
    check_stalled_connections_released,
)
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.health_probe import HealthProbe, LatencyStats, idle_latency
from mlxcel_conformance.hostile import (
    HostileRequest,
    Outcome,
    bad_inputs,
    best_window,
    large_bodies,
    measured_windows,
    multi_prompt_batches,
    pathological_sampler_fields,
    request_templates,
)
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.robustness_plugin import note_evidence
from mlxcel_conformance.stalled_connections import close_all, open_stalled, wait_closed
from mlxcel_conformance.target import Target

# Seconds a hostile request may take to be answered (any status) before it counts as a hang.
ANSWER_BOUND_S = 60.0
STALLED_HEADERS, STALLED_BODIES = 32, 4
# How long /health is probed while the stalled connections are held.
STALL_WINDOW_S = 5.0
# Small enough that a server admitting every prompt (4 x 16 x 128 tokens) answers in time.
BATCHES, PROMPTS, BATCH_TOKENS = 4, 16, 128
BATCH_BOUND_S = 180.0
# Seconds the slots may take to go idle once every answer is in.
ORPHAN_GRACE_S = 2.0


@pytest.fixture
def budget_ms(pytestconfig: pytest.Config) -> float:
    return float(pytestconfig.getoption("--health-budget-ms"))


def claimed(profile: Profile, requests: list[HostileRequest], what: str
            ) -> list[HostileRequest]:
    chosen = [r for r in requests if profile.claims(r.family)]
    if not chosen:
        families = sorted({r.family for r in requests})
        pytest.skip(f"UNSUPPORTED: {what} needs a route of {', '.join(families)}, "
                    f"which profile {profile.name} does not claim")
    return chosen


def probe(target: Target) -> HealthProbe:
    return HealthProbe(target.base_url)


def note(request: pytest.FixtureRequest, stats: LatencyStats, idle: LatencyStats,
         outcomes: list[Outcome], **more: object) -> None:
    mark = request.node.get_closest_marker("conformance")
    feature = str(mark.kwargs["feature"]) if mark else request.node.name
    note_evidence(request.config, feature, {
        "health": stats.to_evidence(), "idle": idle.to_evidence(),
        "outcomes": [o.to_evidence() for o in outcomes], **more})


def judge(outcomes: list[Outcome], stats: LatencyStats, budget: float, during: str,
          request: pytest.FixtureRequest, idle: LatencyStats, shown: list[Outcome] | None = None,
          control: LatencyStats | None = None, **more: object) -> None:
    """A hang first, then /health, then 5xx: the most severe failure is the one reported
    (``shown``: the outcomes kept as evidence, when not all of ``outcomes``)."""
    request.node.mlxcel_checks = ["answered_in_time", "health_within_budget", "no_server_error"]
    note(request, stats, idle, outcomes if shown is None else shown,
         control=control.to_evidence() if control is not None else None, **more)
    check_answered_in_time(outcomes, stats)
    check_health_within_budget(stats, budget, during, idle, outcomes, control)
    check_no_server_error(outcomes)


def run_hostile(target: Target, requests: list[HostileRequest], budget: float, during: str,
                request: pytest.FixtureRequest) -> None:
    """Send ``requests`` while /health is probed, up to LATENCY_ATTEMPTS times (hostile.py):
    the latency budget is judged on the best window, every answer of every window on the
    rest."""
    windows = measured_windows(target, requests, budget, ANSWER_BOUND_S)
    best = best_window(windows, budget)
    judge([o for w in windows for o in w.outcomes], best.health, budget, during, request,
          best.idle, shown=best.outcomes, control=best.control,
          attempts=[{"p99_ms": round(w.health.p99_ms, 1), "floor_ms": round(w.floor_ms, 1)}
                    for w in windows])


@pytest.mark.conformance(family="robustness", feature="robustness.large_body")
def test_large_body_does_not_stall(target: Target, profile: Profile, model_name: str | None,
                                   budget_ms: float, request: pytest.FixtureRequest) -> None:
    requests = claimed(profile, large_bodies(model_name), "a large body")
    run_hostile(target, requests, budget_ms, "large request bodies", request)


@pytest.mark.conformance(family="robustness", feature="robustness.sampler_field")
def test_pathological_sampler_field_does_not_stall(
        target: Target, profile: Profile, model_name: str | None, budget_ms: float,
        request: pytest.FixtureRequest) -> None:
    requests = claimed(profile, pathological_sampler_fields(model_name), "a sampler field")
    run_hostile(target, requests, budget_ms, "pathological sampler fields", request)


@pytest.mark.conformance(family="robustness", feature="robustness.template")
def test_request_template_does_not_stall(
        target: Target, profile: Profile, model_name: str | None, budget_ms: float,
        request: pytest.FixtureRequest) -> None:
    requests = claimed(profile, request_templates(model_name), "a request template")
    run_hostile(target, requests, budget_ms, "request-supplied chat templates", request)


@pytest.mark.conformance(family="robustness", feature="robustness.bad_input")
def test_bad_input_is_never_a_server_error(
        target: Target, profile: Profile, model_name: str | None, budget_ms: float,
        request: pytest.FixtureRequest) -> None:
    requests = claimed(profile, bad_inputs(model_name), "bad input")
    run_hostile(target, requests, budget_ms, "bad input", request)


@pytest.mark.conformance(family="robustness", feature="robustness.read_timeout")
def test_stalled_connections_are_released(target: Target, budget_ms: float,
                                          pytestconfig: pytest.Config,
                                          request: pytest.FixtureRequest) -> None:
    bound = float(pytestconfig.getoption("--stall-bound"))
    request.node.mlxcel_checks = ["health_within_budget", "stalled_connections_released"]
    idle = idle_latency(target.base_url)
    try:
        conns = open_stalled(target.base_url, target.auth_headers, STALLED_HEADERS,
                             STALLED_BODIES)
    except OSError as exc:
        fail("answered_in_time", f"the server refuses connections: {exc}")
    try:
        with probe(target) as watching:
            time.sleep(STALL_WINDOW_S)
        check_health_within_budget(watching.stats(), budget_ms,
                                   f"{len(conns)} stalled connections", idle,
                                   control=watching.control_stats())
        wait_closed(conns, bound)
        closed = [c.closed_after_s for c in conns if c.closed_after_s is not None]
        note(request, watching.stats(), idle, [], stalled=len(conns),
             closed_within_s=round(max(closed), 1) if closed else None,
             still_open=len(conns) - len(closed))
        check_stalled_connections_released(conns, bound)
    finally:
        close_all(conns)


def _processing_slots(client: SuiteClient, within_s: float) -> tuple[int, float]:
    """Slots still processing once ``within_s`` has passed without them all going idle
    (polled on llama-server's documented ``GET /slots``); (0, when) as soon as none is."""
    start = time.monotonic()
    busy = 0
    while True:
        slots = client.get("/slots").json()
        busy = sum(1 for slot in slots if isinstance(slot, dict) and slot.get("is_processing"))
        waited = time.monotonic() - start
        if not busy or waited > within_s:
            return busy, waited
        time.sleep(0.1)


@pytest.mark.conformance(family="robustness", feature="robustness.refused_batch",
                         destructive=True)
def test_refused_batch_leaves_no_work(
        client: SuiteClient, target: Target, profile: Profile, model_name: str | None,
        budget_ms: float, request: pytest.FixtureRequest) -> None:
    """Several many-prompt requests at once, so that some may be refused; once every answer
    is in, no slot should still be processing (a server that admits them all passes)."""
    if not profile.claims("llama-native"):
        pytest.skip("UNSUPPORTED: seeing work that outlives its request needs GET /slots "
                    "(llama-native)")
    variants = claimed(profile, multi_prompt_batches(model_name, PROMPTS, BATCH_TOKENS),
                       "a multi-prompt request")
    request.node.mlxcel_checks = ["answered_in_time", "health_within_budget",
                                  "no_orphaned_work"]
    for variant in variants:
        windows = measured_windows(target, [variant] * BATCHES, budget_ms, BATCH_BOUND_S,
                                   BATCHES)
        best, last = best_window(windows, budget_ms), windows[-1]
        note(request, best.health, best.idle, best.outcomes,
             control=best.control.to_evidence() if best.control is not None else None,
             attempts=len(windows))
        check_answered_in_time([o for w in windows for o in w.outcomes], best.health)
        check_health_within_budget(best.health, budget_ms, variant.label, best.idle,
                                   best.outcomes, best.control)
        if not any(o.status in BUSY for o in last.outcomes):
            continue  # every request admitted: nothing was refused, nothing to leave behind
        processing, waited = _processing_slots(client, ORPHAN_GRACE_S)
        check_no_orphaned_work(processing, waited, variant.label, last.outcomes)
