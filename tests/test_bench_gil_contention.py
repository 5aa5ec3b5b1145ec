"""benchmarks/gil_contention.py measures the decode in each condition it names, interleaved,
and leaves no busy thread or child process behind."""

from __future__ import annotations

import multiprocessing
import threading

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
