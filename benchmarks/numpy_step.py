"""Time per decode step of the NumPy path (the default on MLX's CPU backend), in process: a
batch of greedy sequences, one ``NumpyBatch.next()`` per step, CPU time of the calling thread
and wall time, medians over rounds.

    python -m benchmarks.numpy_step --fixture tiny --batch 1,8,32 --rounds 8

To compare two versions of the path, run it from each checkout (``PYTHONPATH=<checkout>/server``)
one after the other, a few times each: a shared machine moves these numbers by 10-20%.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

from .fixture import fixture_path

THREADS_ENV = "MLXCEL_NUMPY_THREADS"

PROMPT = [5, 6, 7, 8, 9, 10, 11, 12]


def step_times(weights: Any, batch: int, steps: int) -> tuple[float, float]:
    """(CPU ms, wall ms) per step for ``batch`` sequences, after a warm-up."""
    from mlxcel.engine.numpy_decode import NumpyBatch

    generator = NumpyBatch(weights)
    generator.insert([[5 + i, *PROMPT[1:]] for i in range(batch)], [steps + 30] * batch)
    for _ in range(20):
        generator.next()
    cpu, wall = time.thread_time(), time.perf_counter()
    for _ in range(steps):
        generator.next()
    return ((time.thread_time() - cpu) / steps * 1e3, (time.perf_counter() - wall) / steps * 1e3)


def load_weights(fixture: str) -> Any:
    """The NumPy path's weights of ``fixture`` (``tiny`` or ``bench``), threads set as the
    server sets them (``MLXCEL_NUMPY_THREADS=N``: N, as the server's ``--threads N``)."""
    from mlxcel.engine.model import load_model
    from mlxcel.engine.numpy_decode import numpy_weights

    model = load_model(fixture_path(fixture), ctx_size=4096)
    weights = numpy_weights(model.model, True, threads=int(os.environ.get(THREADS_ENV) or 0))
    if weights is None:
        raise SystemExit("the NumPy path does not take this model")
    return weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", default="tiny", help="tiny or bench")
    parser.add_argument("--batch", default="1,8,32")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()

    weights = load_weights(args.fixture)
    batches = [int(b) for b in args.batch.split(",")]
    samples: dict[int, list[tuple[float, float]]] = {b: [] for b in batches}
    for _ in range(args.rounds):
        for batch in batches:
            samples[batch].append(step_times(weights, batch, args.steps))
    results = {
        str(batch): {"cpu_ms": round(statistics.median(c for c, _ in runs), 4),
                     "wall_ms": round(statistics.median(w for _, w in runs), 4)}
        for batch, runs in samples.items()}
    print(json.dumps({"fixture": args.fixture, "steps": args.steps, "rounds": args.rounds,
                      "per_step": results}, indent=2))


if __name__ == "__main__":
    main()
