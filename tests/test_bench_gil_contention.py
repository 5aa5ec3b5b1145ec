"""benchmarks/gil_contention.py measures the decode in each condition it names, interleaved,
and leaves no busy thread or child process behind."""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from benchmarks import gil_contention
from benchmarks.fixture import fixture_path


def test_every_condition_is_measured_and_cleaned_up() -> None:
    threads = threading.active_count()
    results = gil_contention.run(fixture_path("tiny"), tokens=8, runs=2)
    assert [r.condition for r in results] == list(gil_contention.CONDITIONS)
    assert all(len(r.tok_s) == 2 and all(v > 0 for v in r.tok_s) for r in results)
    assert threading.active_count() == threads
    assert not multiprocessing.active_children()
    table = gil_contention.table(results)
    assert table.count("\n") == len(results) + 1
    assert "| alone |" in table and table.splitlines()[2].endswith("| 1.00 |")


def test_a_paced_thread_and_child_are_measured_and_cleaned_up() -> None:
    threads = threading.active_count()
    pace = gil_contention.Pace.parse("0.1/2")
    assert (pace.work_s, pace.period_s) == (0.0001, 0.002)
    results = gil_contention.run(fixture_path("tiny"), tokens=8, runs=1, pace=pace)
    assert [r.condition for r in results] == list(gil_contention.CONDITIONS)
    assert all(len(r.tok_s) == 1 and r.tok_s[0] > 0 for r in results)
    assert threading.active_count() == threads
    assert not multiprocessing.active_children()


def test_a_paced_worker_sleeps_between_its_bursts() -> None:
    """Paced at 1 ms in every 20, the worker runs a fraction of the time it is given."""
    stop_at = time.perf_counter() + 0.2
    began_cpu = time.thread_time()
    gil_contention._spin(lambda: time.perf_counter() > stop_at,
                         gil_contention.Pace.parse("1/20"))
    assert time.thread_time() - began_cpu < 0.1


@pytest.mark.parametrize("text", ["4/4", "0/4", "5/4", "abc", "1"])
def test_a_pace_outside_zero_work_period_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        gil_contention.Pace.parse(text)
