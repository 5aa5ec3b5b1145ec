"""The robustness family's options, and its watch over a whole run.

The family is hostile (it sends what once hung or crashed servers), so it runs only with
``--robustness``. With it, ``run_watch`` probes ``/health`` for the whole session (every test,
schemathesis included) and, for a server whose process id is known (the self-started one, or
``--server-pid``), reads its anonymous resident memory after a warm-up and again after each
pass of the run (``--passes``): the lowest reading over a few seconds, taken after emptying
the prompt cache when the server lets a client do so (what a cache holds is bounded by its
own setting, not left behind by the run). The result is one report record,
``robustness.whole_run``: FAIL when /health's p99 exceeded the budget above its floor (the
idle p99, or the control responder's p99 over the run), when the self-started server's
access log shows a 5xx, or, over four passes or more, when every pass after the first added
more memory than ``--rss-tolerance`` of what the pass before it ended with (a leak grows with
the work, in every pass; what a first pass loads once, such as code read on first use and
the allocator arenas of threads first used, stays but does not grow again, and a later pass
can grow the allocator's holdings or a bounded cache). Fewer passes show their growth and
judge none (``checks/robustness.py``, ``JUDGED_PASSES``).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import httpx
import pytest

from .checks.robustness import (
    JUDGED_PASSES,
    RSS_SLACK_BYTES,
    health_floor,
    memory_grew_every_pass,
    rss_allowed,
)
from .checks.sources import source_of
from .errors import ConformanceFailure
from .health_probe import HealthProbe, LatencyStats, idle_latency, server_anon_bytes
from .passes import after_each_pass
from .report import Record, Verdict
from .target import Target

WATCH_FEATURE = "robustness.whole_run"
# Seconds the server may take to give memory back after a pass (or after its prompt cache
# was emptied): its memory is read every RSS_POLL_S and the lowest reading counts.
SETTLE_S = 10.0
RSS_POLL_S = 0.5
_ACCESS_STATUS = re.compile(r'" (\d{3})\b')


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlxcel-conformance")
    group.addoption("--robustness", action="store_true", default=False,
                    help="run the robustness family: hostile requests (large bodies, "
                    "pathological sampler fields, request templates, stalled connections, "
                    "bad input) while /health is probed (default: off)")
    group.addoption("--health-budget-ms", type=float, default=100.0, metavar="MS",
                    help="robustness: /health p99 latency allowed while hostile requests run "
                    "(default: 100)")
    group.addoption("--stall-bound", type=float, default=30.0, metavar="SECONDS",
                    help="robustness: seconds a stalled connection may stay open (default: 30)")
    group.addoption("--server-pid", type=int, default=None, metavar="PID",
                    help="robustness: process id of a --base-url server, to watch its memory "
                    "(default: the self-started server's)")
    group.addoption("--rss-tolerance", type=float, default=0.10, metavar="FRACTION",
                    help="robustness: with --passes 4 or more, memory is a leak when every "
                    "pass after the first added more than this fraction of what the pass "
                    f"before it ended with, and {RSS_SLACK_BYTES // 2**20} MiB (default: 0.10)")


class Problem(NamedTuple):
    """One defect the watch found: the check it breaks, and what was measured."""

    check: str
    message: str


@dataclass
class WatchResult:
    health: LatencyStats
    budget_ms: float
    rss_start: int | None = None  # anonymous memory after the warm-up
    # Anonymous memory after each pass, the prompt cache emptied (one reading per pass).
    rss_passes: list[int] = field(default_factory=list)
    tolerance: float = 0.10
    server_errors: Counter[int] = field(default_factory=Counter)
    idle: LatencyStats | None = None  # /health before the run, with nothing else sent
    rss_before_reset: int | None = None  # after the last pass, before the cache was emptied
    # The slowest probes: latency in ms and the test that was running when each started.
    slowest: list[tuple[float, str]] = field(default_factory=list)
    control: LatencyStats | None = None  # the control responder over the whole run

    @property
    def rss_end(self) -> int | None:
        return self.rss_passes[-1] if self.rss_passes else None

    def problems(self) -> list[Problem]:
        found = []
        floor = health_floor(self.idle, self.control)
        if self.health.failures or self.health.p99_ms > self.budget_ms + floor:
            control = f", control p99 {self.control.p99_ms:.0f} ms" if self.control else ""
            found.append(Problem("health_within_budget",
                                 f"/health p99 {self.health.p99_ms:.0f} ms over the run "
                                 f"({self.health.failures} unanswered); budget "
                                 f"{self.budget_ms:.0f} ms above {floor:.0f} ms (idle p99 "
                                 f"{self.idle.p99_ms if self.idle else 0:.0f} ms{control})"
                                 f"{self._where()}"))
        if memory_grew_every_pass(self.rss_passes, self.tolerance):
            found.append(Problem("memory_bounded",
                                 f"memory grew in every pass after the first, each time by "
                                 f"more than {self.tolerance:.0%} and "
                                 f"{RSS_SLACK_BYTES // 2**20} MiB (anonymous, the prompt "
                                 f"cache emptied: {self._growth()})"))
        if self.server_errors:
            found.append(Problem("no_server_error",
                                 f"{sum(self.server_errors.values())} 5xx answers in the "
                                 f"server log"))
        return found

    @property
    def leak_judged(self) -> bool:
        """Three passes after the first at least: a leak grows memory in each, where one or two
        passes can grow it for other reasons (``checks/robustness.py``, ``JUDGED_PASSES``)."""
        return len(self.rss_passes) >= JUDGED_PASSES

    def _growth(self) -> str:
        """Each pass's growth: ``+24.6, +3.1 MiB over passes 1-2``."""
        readings = self.rss_passes if self.rss_start is None else [self.rss_start,
                                                                    *self.rss_passes]
        steps = [f"{(b - a) / 2**20:+.1f}" for a, b in zip(readings, readings[1:], strict=False)]
        first = 2 if self.rss_start is None else 1
        return f"{', '.join(steps)} MiB over passes {first}-{len(self.rss_passes)}"

    def _where(self) -> str:
        if not self.slowest:
            return ""
        return "; slowest probes: " + ", ".join(f"{ms:.0f} ms during {during}"
                                                for ms, during in self.slowest[:3])

    def evidence(self) -> dict[str, Any]:
        def mib(value: int | None) -> float | None:
            return None if value is None else round(value / 2**20, 1)

        return {"health": self.health.to_evidence(), "budget_ms": self.budget_ms,
                "idle": self.idle.to_evidence() if self.idle is not None else None,
                "control": self.control.to_evidence() if self.control is not None else None,
                "rss_start_mib": mib(self.rss_start), "rss_end_mib": mib(self.rss_end),
                "rss_passes_mib": [mib(value) for value in self.rss_passes],
                "rss_before_cache_reset_mib": mib(self.rss_before_reset),
                "server_errors": {str(k): v for k, v in sorted(self.server_errors.items())},
                "slowest_probes": [{"ms": round(ms, 1), "during": during}
                                   for ms, during in self.slowest]}

    def summary(self) -> str:
        ev = self.evidence()
        idle, control = ev["idle"] or {}, ev["control"] or {}
        return (f"robustness watch: /health p50 {ev['health']['p50_ms']} ms, p99 "
                f"{ev['health']['p99_ms']} ms, max {ev['health']['max_ms']} ms over "
                f"{ev['health']['probes']} probes (idle p50 {idle.get('p50_ms')} ms, p99 "
                f"{idle.get('p99_ms')} ms; control p99 {control.get('p99_ms')} ms); "
                f"anonymous memory {ev['rss_start_mib']} MiB at the start, "
                f"{ev['rss_before_cache_reset_mib']} MiB after the run, "
                f"{self._passes_text()}; 5xx {ev['server_errors'] or 0}{self._where()}")

    def _passes_text(self) -> str:
        if not self.rss_passes:
            return "not read after it"
        ends = ", ".join(f"{value / 2**20:.1f}" for value in self.rss_passes)
        judged = "a leak if every pass after the first grew it" if self.leak_judged else \
            f"not judged under {JUDGED_PASSES} passes (a first pass's load is not a leak)"
        return (f"{ends} MiB after {'each of ' if len(self.rss_passes) > 1 else ''}"
                f"{len(self.rss_passes)} pass{'es' if len(self.rss_passes) > 1 else ''} with "
                f"the prompt cache emptied ({self._growth()}; {judged})")


def server_errors_in_log(target: Target, offset: int = 0) -> Counter[int]:
    """5xx statuses in the self-started server's access log (past ``offset`` bytes)."""
    if target.log_path is None or not target.log_path.exists():
        return Counter()
    text = target.log_path.read_bytes()[offset:].decode("utf-8", errors="replace")
    found: Counter[int] = Counter()
    for line in text.splitlines():
        if "HTTP/1." not in line:
            continue
        match = _ACCESS_STATUS.search(line)
        if match and match.group(1).startswith("5") and match.group(1) not in ("501", "503"):
            found[int(match.group(1))] += 1
    return found


def settled_rss(pid: int, allowed: float | None) -> int | None:
    """The lowest anonymous memory of ``pid`` over SETTLE_S, sooner once it is no more than
    ``allowed`` (memory freed a few seconds late, by a trim or a deferred collection, is
    back all the same)."""
    lowest: int | None = None
    deadline = time.monotonic() + SETTLE_S
    while True:
        time.sleep(RSS_POLL_S)
        current = server_anon_bytes(pid)
        if current is not None:
            lowest = current if lowest is None else min(lowest, current)
        back = lowest is not None and allowed is not None and lowest <= allowed
        if back or time.monotonic() >= deadline:
            return lowest


def _reset_prompt_cache(target: Target) -> bool:
    """Empty a prompt cache the server lets a client empty (mlxcel's ``POST /v1/cache/reset``):
    what it holds is bounded by design (``--cache-bytes``), not left behind by the run."""
    try:
        response = httpx.post(f"{target.base_url}/v1/cache/reset", headers=target.auth_headers,
                              timeout=30)
    except httpx.HTTPError:
        return False
    return response.status_code == 200


def _warm_up(target: Target) -> None:
    """A few ordinary requests, so the memory baseline includes what any first request loads."""
    payload = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 4}
    for _ in range(3):
        try:
            httpx.post(f"{target.base_url}/v1/chat/completions", json=payload,
                       headers=target.auth_headers, timeout=60)
        except httpx.HTTPError:
            return


def _pass_end(target: Target, pid: int, readings: list[int], tolerance: float,
              before_reset: bool = False) -> int | None:
    """Anonymous memory after a pass, the prompt cache emptied where the server lets a client
    empty it, appended to ``readings``; with ``before_reset`` (the run's end, whose record
    shows it) returns the reading taken before emptying it too."""
    allowed = rss_allowed(readings[-1], tolerance) if readings else None
    raw = settled_rss(pid, allowed) if before_reset else None
    settled = settled_rss(pid, allowed) if _reset_prompt_cache(target) or raw is None else raw
    if settled is not None:
        readings.append(settled)
    return raw


@pytest.fixture(scope="session", autouse=True)
def run_watch(request: pytest.FixtureRequest) -> Iterator[None]:
    config = request.config
    if not config.getoption("--robustness"):
        yield
        return
    target: Target = request.getfixturevalue("target")
    pid = config.getoption("--server-pid") or target.pid
    tolerance = float(config.getoption("--rss-tolerance"))
    _warm_up(target)
    idle = idle_latency(target.base_url, 3.0)
    rss_start = server_anon_bytes(pid) if pid else None
    # The warm-up's reading starts the list the passes are judged by; it is not judged itself.
    readings: list[int] = [rss_start] if rss_start is not None else []
    if pid:
        after_each_pass(config, lambda index: _pass_end(target, pid, readings, tolerance))
    log_offset = target.log_path.stat().st_size if target.log_path and target.log_path.exists() \
        else 0
    probe = HealthProbe(target.base_url, interval_s=0.1)
    timeline = _TIMELINE
    with probe:
        yield
    rss_raw = _pass_end(target, pid, readings, tolerance, before_reset=True) if pid else None
    result = WatchResult(probe.stats(), float(config.getoption("--health-budget-ms")),
                         rss_start, readings[1:] if rss_start is not None else readings,
                         tolerance, server_errors_in_log(target, log_offset), idle, rss_raw,
                         [(ms, running_at(timeline, began)) for began, ms in probe.slowest()],
                         probe.control_stats())
    config.stash[_WATCH_KEY] = result
    _record(config, result)


_WATCH_KEY = pytest.StashKey[WatchResult]()
# (time.monotonic(), test name) at the start of each test of the run.
_TIMELINE: list[tuple[float, str]] = []


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    del location
    _TIMELINE.append((time.monotonic(), nodeid.rsplit("::", 1)[-1]))


def running_at(timeline: list[tuple[float, str]], moment: float) -> str:
    """The test that had started last at ``moment`` (``"start"`` before the first)."""
    name = "start"
    for began, test in timeline:
        if began > moment:
            break
        name = test
    return name
_EVIDENCE_KEY = pytest.StashKey[dict[str, dict[str, Any]]]()


def note_evidence(config: pytest.Config, feature: str, evidence: dict[str, Any]) -> None:
    """What a robustness test measured, kept for its record when it passes (a failure
    carries its own evidence)."""
    config.stash.setdefault(_EVIDENCE_KEY, {})[feature] = evidence


def _record(config: pytest.Config, result: WatchResult) -> None:
    from .plugin import _REPORT_KEY  # the report of this run

    if _REPORT_KEY not in config.stash:
        return
    noted = config.stash.get(_EVIDENCE_KEY, {})
    for record in config.stash[_REPORT_KEY].records:
        if record.family == "robustness" and not record.evidence and record.feature in noted:
            record.evidence = noted[record.feature]
    problems = result.problems()
    evidence = result.evidence()
    if problems:  # one defect per problem: a leak and a 5xx are two
        evidence["defect"] = [f"{p.check}: {p.message}" for p in problems]
    judged = ["health_within_budget", "no_server_error",
              *(["memory_bounded"] if result.leak_judged else [])]
    checks = [p.check for p in problems] or judged
    # A 5xx breaks a public rule (RFC 9110); the budget and the memory bound are mlxcel's own.
    tier = "contract" if any(p.check == "no_server_error" for p in problems) else "extension"
    if problems:  # as ``fail`` gives every failure: its tier and its sources
        evidence["tier"] = tier
        evidence["source"] = "; ".join(dict.fromkeys(source_of(p.check) or "" for p in problems))
    failure = ConformanceFailure(checks[0], "; ".join(p.message for p in problems)) \
        if problems else None
    config.stash[_REPORT_KEY].add(Record(
        family="robustness", feature=WATCH_FEATURE,
        verdict=Verdict.FAIL if failure else Verdict.PASS,
        checks=checks, severity=failure.severity.value if failure else None,
        message=failure.message if failure else result.summary(),
        evidence=evidence, duration_s=0.0, tier=tier))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _WATCH_KEY in config.stash:
        terminalreporter.write_line(config.stash[_WATCH_KEY].summary())

