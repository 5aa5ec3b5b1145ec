"""benchmarks/engine_tokens.py measures the engine and the in-process MLX limit on the same
requests at each level, and stops the engine it started."""

from __future__ import annotations

import threading

from benchmarks import engine_tokens
from benchmarks.fixture import fixture_path


def test_each_level_beside_the_limit() -> None:
    results = engine_tokens.measure(fixture_path("tiny"), [1, 2], requests_per_stream=1,
                                    max_tokens=8, rounds=2)
    assert [entry["streams"] for entry in results] == [1, 2]
    for entry in results:
        assert len(entry["rounds"]) == 2
        for measured in entry["rounds"]:
            assert measured["tok_s"] > 0 and measured["limit_tok_s"] > 0
            assert abs(measured["ratio"] - measured["tok_s"] / measured["limit_tok_s"]) < 0.01
            assert measured["engine_cpu_ms_per_token"] >= 0  # /proc counts 10 ms ticks
    assert engine_tokens.ENGINE_THREAD not in {t.name for t in threading.enumerate()}
    rows = engine_tokens.table(results).splitlines()
    assert len(rows) == 4 and rows[2].startswith("| 1 |") and rows[3].startswith("| 2 |")


def test_without_the_limit() -> None:
    results = engine_tokens.measure(fixture_path("tiny"), [1], requests_per_stream=1,
                                    max_tokens=4, rounds=1, limit=False)
    assert "limit_tok_s" not in results[0]["rounds"][0]
    assert "| - | - |" in engine_tokens.table(results)
