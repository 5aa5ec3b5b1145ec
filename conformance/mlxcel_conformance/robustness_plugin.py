"""The robustness family's options, and its watch over a whole run.

The family is hostile (it sends what once hung or crashed servers), so it runs only with
``--robustness``. With it, ``run_watch`` probes ``/health`` for the whole session (every test,
schemathesis included) and, for a server whose process id is known (the self-started one, or
``--server-pid``), samples its resident memory after a warm-up and again after the run (the
lowest reading over a few seconds), then once more after emptying the prompt cache when the
server lets a client do so (what a cache holds is bounded by its own setting, not left
behind by the run). The result is one report record, ``robustness.whole_run``: FAIL when
/health's p99 exceeded the budget above its floor (the idle p99, or the control responder's
p99 over the run), when memory did not come back within ``--rss-tolerance`` of its start, or
when the self-started server's access log shows a 5xx.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from .checks.robustness import health_floor
from .errors import ConformanceFailure
from .health_probe import HealthProbe, LatencyStats, idle_latency, server_rss_bytes
from .report import Record, Verdict
from .target import Target

WATCH_FEATURE = "robustness.whole_run"
# Seconds the server may take to give memory back after the run (or after its prompt cache
# was emptied): its resident memory is read every RSS_POLL_S and the lowest reading counts.
SETTLE_S = 10.0
RSS_POLL_S = 0.5
RSS_SLACK_BYTES = 16 * 2**20
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
                    help="robustness: resident memory after the run may exceed its start by "
                    "this fraction, and by 16 MiB in any case (default: 0.10)")


@dataclass
class WatchResult:
    health: LatencyStats
    budget_ms: float
    rss_start: int | None = None
    rss_end: int | None = None
    tolerance: float = 0.10
    server_errors: Counter[int] = field(default_factory=Counter)
    idle: LatencyStats | None = None  # /health before the run, with nothing else sent
    rss_before_reset: int | None = None  # after the run, before the prompt cache was emptied
    # The slowest probes: latency in ms and the test that was running when each started.
    slowest: list[tuple[float, str]] = field(default_factory=list)
    control: LatencyStats | None = None  # the control responder over the whole run

    def problems(self) -> list[str]:
        found = []
        floor = health_floor(self.idle, self.control)
        if self.health.failures or self.health.p99_ms > self.budget_ms + floor:
            control = f", control p99 {self.control.p99_ms:.0f} ms" if self.control else ""
            found.append(f"/health p99 {self.health.p99_ms:.0f} ms over the run "
                         f"({self.health.failures} unanswered); budget {self.budget_ms:.0f} ms "
                         f"above {floor:.0f} ms (idle p99 "
                         f"{self.idle.p99_ms if self.idle else 0:.0f} ms{control})"
                         f"{self._where()}")
        if self.rss_start and self.rss_end and self.rss_end > rss_allowed(self.rss_start,
                                                                           self.tolerance):
            found.append(f"resident memory {self.rss_end / 2**20:.0f} MiB after the run, "
                         f"{self.rss_start / 2**20:.0f} MiB at its start")
        if self.server_errors:
            found.append(f"{sum(self.server_errors.values())} 5xx answers in the server log")
        return found

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
                f"RSS {ev['rss_start_mib']} -> "
                f"{ev['rss_before_cache_reset_mib']} MiB after the run, {ev['rss_end_mib']} MiB "
                f"with the prompt cache emptied; 5xx {ev['server_errors'] or 0}{self._where()}")


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


def rss_allowed(start: int, tolerance: float) -> float:
    """Resident memory a server may hold after the run: ``tolerance`` above its start, and at
    least RSS_SLACK_BYTES above it (a 22 MiB llama-server that keeps 3 MiB of thread heaps has
    leaked nothing)."""
    return start + max(start * tolerance, RSS_SLACK_BYTES)


def settled_rss(pid: int, start: int | None, tolerance: float) -> int | None:
    """The lowest resident memory of ``pid`` over SETTLE_S, sooner once it is back within
    ``tolerance`` of ``start`` (memory freed a few seconds late, by a trim or a deferred
    collection, is back all the same)."""
    lowest: int | None = None
    deadline = time.monotonic() + SETTLE_S
    while True:
        time.sleep(RSS_POLL_S)
        current = server_rss_bytes(pid)
        if current is not None:
            lowest = current if lowest is None else min(lowest, current)
        back = lowest is not None and start is not None and lowest <= rss_allowed(start,
                                                                                  tolerance)
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


@pytest.fixture(scope="session", autouse=True)
def run_watch(request: pytest.FixtureRequest) -> Iterator[None]:
    config = request.config
    if not config.getoption("--robustness"):
        yield
        return
    target: Target = request.getfixturevalue("target")
    pid = config.getoption("--server-pid") or target.pid
    _warm_up(target)
    idle = idle_latency(target.base_url, 3.0)
    rss_start = server_rss_bytes(pid) if pid else None
    log_offset = target.log_path.stat().st_size if target.log_path and target.log_path.exists() \
        else 0
    probe = HealthProbe(target.base_url, interval_s=0.1)
    timeline = _TIMELINE
    with probe:
        yield
    tolerance = float(config.getoption("--rss-tolerance"))
    rss_raw = settled_rss(pid, rss_start, tolerance) if pid else None
    rss_end = rss_raw
    if pid and _reset_prompt_cache(target):
        rss_end = settled_rss(pid, rss_start, tolerance)
    result = WatchResult(probe.stats(), float(config.getoption("--health-budget-ms")),
                         rss_start, rss_end, tolerance,
                         server_errors_in_log(target, log_offset), idle, rss_raw,
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
    failure = ConformanceFailure("health_within_budget", "; ".join(problems)) if problems \
        else None
    config.stash[_REPORT_KEY].add(Record(
        family="robustness", feature=WATCH_FEATURE,
        verdict=Verdict.FAIL if failure else Verdict.PASS,
        checks=["health_within_budget"], severity=failure.severity.value if failure else None,
        message=failure.message if failure else result.summary(),
        evidence=result.evidence(), duration_s=0.0))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    if _WATCH_KEY in config.stash:
        terminalreporter.write_line(config.stash[_WATCH_KEY].summary())

