"""The robustness family's checks, harness and matrix, on made-up measurements and on tiny local
servers (no inference server involved)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_stream_corpus import rejects

from mlxcel_conformance.checks.robustness import (
    check_answered_in_time,
    check_health_within_budget,
    check_no_orphaned_work,
    check_no_server_error,
    check_stalled_connections_released,
)
from mlxcel_conformance.health_probe import HealthProbe, LatencyStats, http_status, percentile
from mlxcel_conformance.hostile import HostileRequest, Outcome, raw_json, send
from mlxcel_conformance.robustness_matrix import main as matrix_main
from mlxcel_conformance.stalled_connections import close_all, open_stalled, wait_closed
from mlxcel_conformance.target import Target


def stats(p99: float, failures: int = 0) -> LatencyStats:
    return LatencyStats(samples=50, p50_ms=2.0, p99_ms=p99, max_ms=p99, failures=failures)


def test_health_budget_is_measured_above_the_idle_floor() -> None:
    check_health_within_budget(stats(90), 100, "x")
    check_health_within_budget(stats(180), 100, "x", idle=stats(90))
    with rejects("health_within_budget"):
        check_health_within_budget(stats(120), 100, "x")
    with rejects("health_within_budget"):
        check_health_within_budget(stats(10, failures=1), 100, "x")
    with rejects("health_within_budget"):
        check_health_within_budget(LatencyStats(0, 0, 0, 0, 0), 100, "x")


def test_health_budget_is_measured_above_the_control_over_the_same_window() -> None:
    check_health_within_budget(stats(250), 100, "x", idle=stats(5), control=stats(160))
    with rejects("health_within_budget"):
        check_health_within_budget(stats(250), 100, "x", idle=stats(5), control=stats(20))


def test_a_request_without_answer_is_a_hang() -> None:
    check_answered_in_time([Outcome("a", 400, 0.1), Outcome("b", 200, 1.0)])
    with rejects("answered_in_time"):
        check_answered_in_time([Outcome("a", None, 60.0, "no answer")])


@pytest.mark.parametrize("status", [400, 404, 413, 422, 200, 501, 503, 529, 429])
def test_client_errors_busy_and_not_served_are_no_server_error(status: int) -> None:
    check_no_server_error([Outcome("a", status, 0.1)])


@pytest.mark.parametrize("status", [500, 502, 504])
def test_server_errors_fail(status: int) -> None:
    with rejects("no_server_error"):
        check_no_server_error([Outcome("a", status, 0.1)])


def test_orphaned_work_is_any_slot_still_processing() -> None:
    check_no_orphaned_work(0, 0.1, "batch")
    with rejects("no_orphaned_work"):
        check_no_orphaned_work(2, 2.0, "batch")


def test_percentile_is_nearest_rank() -> None:
    assert percentile([], 0.99) == 0.0
    assert percentile(list(range(1, 101)), 0.99) == 99
    assert percentile([5.0], 0.5) == 5.0


def test_raw_json_keeps_what_an_encoder_cannot() -> None:
    body = raw_json({"t": "@x@", "s": "\ud800"}, x="1e400")
    assert body == b'{"t": 1e400, "s": "\\ud800"}'


@pytest.fixture
def listener() -> Iterator[tuple[socket.socket, str]]:
    """A socket that accepts connections and never reads or answers them."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    yield sock, f"http://127.0.0.1:{sock.getsockname()[1]}"
    sock.close()


def test_stalled_connections_held_by_a_server_that_never_answers(
        listener: tuple[socket.socket, str]) -> None:
    _, url = listener
    conns = open_stalled(url, {}, headers=2, bodies=1)
    try:
        wait_closed(conns, 0.5)
        with rejects("stalled_connections_released"):
            check_stalled_connections_released(conns, 0.5)
    finally:
        close_all(conns)


def test_stalled_connections_closed_by_the_server_pass(
        listener: tuple[socket.socket, str]) -> None:
    sock, url = listener

    def close_each() -> None:
        for _ in range(3):
            conn, _ = sock.accept()
            conn.sendall(b"HTTP/1.1 408 Request Timeout\r\n\r\n")
            conn.close()

    thread = threading.Thread(target=close_each)
    thread.start()
    conns = open_stalled(url, {}, headers=2, bodies=1)
    try:
        wait_closed(conns, 5)
        check_stalled_connections_released(conns, 5)
        assert conns[0].answer.startswith(b"HTTP/1.1 408")
    finally:
        close_all(conns)
        thread.join(5)


def test_probes_and_requests_to_nobody_are_outcomes_not_exceptions() -> None:
    assert http_status("http://127.0.0.1:9", "/health", {}, 1.0) is None
    with HealthProbe("http://127.0.0.1:9", interval_s=0.01, timeout_s=0.2) as probe:
        pass
    assert probe.stats().failures == probe.stats().samples >= 1
    outcome = send(Target("http://127.0.0.1:9"), HostileRequest("x", "chat", "/", b"{}"), 1.0)
    assert outcome.status is None and outcome.detail


class _SlowHealth:
    """A server whose every answer takes ``delay_s`` (what a stalled event loop looks like)."""

    def __init__(self, delay_s: float) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.delay_s, self.done = delay_s, threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.done.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            time.sleep(self.delay_s)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            conn.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join(5)
        self.sock.close()


def test_the_probe_process_times_the_server_and_the_control() -> None:
    slow = _SlowHealth(0.15)
    try:
        with HealthProbe(slow.url, interval_s=0.01) as probe:
            time.sleep(0.6)
    finally:
        slow.close()
    health, control = probe.stats(), probe.control_stats()
    assert health.samples >= 2 and health.failures == 0 and health.p50_ms >= 140
    assert control is not None and control.samples >= 2
    assert control.p50_ms < 100  # the control answers at once: the server's delay is its own
    with rejects("health_within_budget"):
        check_health_within_budget(health, 100, "x", control=control)
    assert probe.slowest(1)[0][1] == health.max_ms


def _report(tmp: Path, name: str, records: list[dict[str, object]]) -> str:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"records": records}))
    return str(path)


def test_the_matrix_merges_fresh_server_runs(tmp_path: Path) -> None:
    def rec(feature: str, verdict: str) -> dict[str, object]:
        return {"family": "robustness", "feature": feature, "verdict": verdict, "message": "",
                "evidence": {"health": {"p99_ms": 3.0, "max_ms": 4.0}}}

    one = _report(tmp_path, "a", [rec("robustness.large_body", "PASS"),
                                  rec("robustness.whole_run", "PASS")])
    two = _report(tmp_path, "b", [rec("robustness.large_body", "FAIL"),
                                  rec("robustness.template", "PASS")])
    whole = _report(tmp_path, "c", [rec("robustness.whole_run", "PASS")])
    matrix_main(["--out", str(tmp_path), "--note", "run here", f"peer={one},{two}",
                 f"ref={whole}"])
    page = (tmp_path / "robustness.md").read_text()
    assert "run here" in page
    row = next(line for line in page.splitlines() if "`robustness.large_body`" in line
               and line.startswith("|"))
    assert row.split("|")[2].strip() == "FAIL"
    whole_row = next(line for line in page.splitlines() if "`robustness.whole_run`" in line
                     and line.startswith("|"))
    assert [c.strip() for c in whole_row.split("|")[2:4]] == ["not run", "PASS"]
    data = json.loads((tmp_path / "robustness.json").read_text())
    assert set(data) == {"peer", "ref"}


def test_the_whole_run_judges_memory_with_a_floor_and_health_above_the_control() -> None:
    from mlxcel_conformance.robustness_plugin import WatchResult

    mib = 2**20
    quiet = stats(20)
    # Under four passes, growth is shown and not judged: first use, a filling cache and a leak
    # look alike (the fixture, 100 examples, 2026-12-07: +16.5, +16.7, +35.5, -15.4 MiB).
    one = WatchResult(quiet, 100, 130 * mib, [180 * mib], 0.10)
    assert one.problems() == [] and "not judged under 4 passes" in one.summary()
    three = WatchResult(quiet, 100, 98 * mib, [114 * mib, 131 * mib, 166 * mib], 0.10)
    assert three.problems() == []
    assert WatchResult(quiet, 100, 98 * mib, [*three.rss_passes, 151 * mib], 0.10).problems() \
        == []
    # The first pass's load does not count, nor does one later pass's allocator growth (the
    # fixture's 100-example run, 2026-12-07: +16.7, +6.2, +6.9, +39.3 MiB).
    settled = WatchResult(quiet, 100, 99 * mib, [116 * mib, 122 * mib, 129 * mib, 168 * mib],
                          0.10)
    assert settled.problems() == []
    assert "+17.0, +6.0, +7.0, +39.0 MiB over passes 1-4" in settled.summary()
    assert WatchResult(quiet, 100, 22 * mib, [30 * mib, 47 * mib, 64 * mib, 66 * mib],
                       0.10).problems() == []
    # A leak grows memory in every pass after the first.
    leaked = WatchResult(quiet, 100, 432 * mib, [470 * mib, 530 * mib, 590 * mib, 650 * mib],
                         0.10).problems()
    assert [p.check for p in leaked] == ["memory_bounded"]
    assert "grew in every pass after the first" in leaked[0].message
    assert "+38.0, +60.0, +60.0, +60.0 MiB over passes 1-4" in leaked[0].message
    small = WatchResult(quiet, 100, 100 * mib, [120 * mib, 140 * mib, 160 * mib, 180 * mib],
                        0.10)
    assert len(small.problems()) == 1  # 20 MiB a pass: over the 16 MiB floor
    noisy = WatchResult(stats(250), 100, None, idle=stats(5), control=stats(180))
    assert noisy.problems() == []  # the machine added as much to the control
    stalled = WatchResult(stats(250), 100, None, idle=stats(5), control=stats(20),
                          slowest=[(900.0, "test_x")])
    assert [p.check for p in stalled.problems()] == ["health_within_budget"]
    assert "900 ms during test_x" in stalled.problems()[0].message


def _whole_run_record(result: Any) -> Any:
    from types import SimpleNamespace

    from mlxcel_conformance.plugin import _REPORT_KEY
    from mlxcel_conformance.report import Report
    from mlxcel_conformance.robustness_plugin import WATCH_FEATURE, _record

    config = SimpleNamespace(stash=pytest.Stash())
    config.stash[_REPORT_KEY] = Report(target="t", profile="mlxcel")
    _record(config, result)  # type: ignore[arg-type]
    report = config.stash[_REPORT_KEY]
    return next(r for r in report.records if r.feature == WATCH_FEATURE), report


def test_each_whole_run_problem_is_its_own_defect_in_its_own_tier() -> None:
    from collections import Counter

    from mlxcel_conformance.robustness_plugin import WatchResult

    mib = 2**20
    leak = [120 * mib, 150 * mib, 180 * mib, 210 * mib]
    record, report = _whole_run_record(WatchResult(stats(20), 100, 100 * mib, leak, 0.10))
    assert (record.verdict.value, record.tier, record.checks) == \
        ("FAIL", "extension", ["memory_bounded"])
    assert record.evidence["tier"] == "extension"  # the matrix's "FAIL (extension)"
    assert "every per-client cost has a bound" in record.evidence["source"]
    both = WatchResult(stats(20), 100, 100 * mib, leak, 0.10, server_errors=Counter({500: 2}))
    record, report = _whole_run_record(both)
    assert record.tier == "contract"  # a 5xx breaks RFC 9110
    assert record.checks == ["memory_bounded", "no_server_error"]
    assert len(report.distinct_defects()) == 2
    record, _ = _whole_run_record(WatchResult(stats(20), 100, 100 * mib, leak[:3], 0.10))
    assert (record.verdict.value, record.checks) == ("PASS", ["health_within_budget",
                                                              "no_server_error"])
