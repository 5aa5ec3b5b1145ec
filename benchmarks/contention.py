"""How much a NumPy-path decode step slows down when another process takes part of a core: the
step of ``numpy_step.py`` (one ``NumpyBatch.next()``, in process, no HTTP) timed while a busy
process runs at each duty cycle (busy for that share of every 2 ms, asleep for the rest), with
numpy's OpenBLAS on 1 and on 2 threads, rounds interleaved, medians of wall ms per step.

    python -m benchmarks.contention --fixture bench --batch 8,32 --duty 0,0.2,0.5 --rounds 3

A served step shares the machine's cores with the event loop and the client; this measures what
that sharing costs the step (benchmarks/README.md, "Served steps and contention").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from typing import Any

from .numpy_step import load_weights, step_times

# The busy process: spins for ``duty`` of every 2 ms period and sleeps for the rest.
BUSY = """
import sys, time
duty = float(sys.argv[1])
while True:
    start = time.perf_counter()
    while time.perf_counter() - start < duty * 0.002:
        pass
    time.sleep((1 - duty) * 0.002)
"""


def with_busy(duty: float, measure: Any) -> float:
    """``measure()`` while a busy process runs at ``duty`` (none at 0)."""
    if duty <= 0:
        return float(measure())
    busy = subprocess.Popen([sys.executable, "-c", BUSY, str(duty)])
    try:
        time.sleep(0.2)
        return float(measure())
    finally:
        busy.kill()
        busy.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", default="bench", help="tiny or bench")
    parser.add_argument("--batch", default="8,32")
    parser.add_argument("--duty", default="0,0.2,0.5", help="busy shares of one core")
    parser.add_argument("--threads", default="1,2", help="numpy's OpenBLAS threads")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    from mlxcel.engine.numpy_decode import limit_numpy_blas
    from mlxcel.engine.numpy_decode.products import product_for

    weights = load_weights(args.fixture)
    batches = [int(b) for b in args.batch.split(",")]
    duties = [float(d) for d in args.duty.split(",")]
    thread_counts = [int(t) for t in args.threads.split(",")]
    samples: dict[tuple[int, int, float], list[float]] = {}
    for _ in range(args.rounds):
        for threads in thread_counts:
            limit_numpy_blas(threads)
            weights.matmul = product_for(threads)
            for batch in batches:
                for duty in duties:
                    ms = with_busy(duty, lambda b=batch: step_times(weights, b, args.steps)[1])
                    samples.setdefault((threads, batch, duty), []).append(ms)
    rows = []
    for (threads, batch, duty), runs in sorted(samples.items()):
        quiet = statistics.median(samples[(threads, batch, duties[0])])
        median = statistics.median(runs)
        rows.append({"threads": threads, "batch": batch, "duty": duty,
                     "wall_ms": round(median, 2), "range": [round(min(runs), 2),
                                                            round(max(runs), 2)],
                     "vs_first_duty": round(median / quiet, 3)})
    print(json.dumps({"fixture": args.fixture, "steps": args.steps, "rounds": args.rounds,
                      "per_step": rows}, indent=2))


if __name__ == "__main__":
    main()
