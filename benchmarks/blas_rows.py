"""The matrix products of one ``bench`` decode step (8 layers of the 28M fixture's shapes,
weights ``(in, out)`` as the NumPy path stores them), numpy's OpenBLAS on one thread, for a few
row counts: what ``OPENBLAS_CORETYPE`` changes (``server/mlxcel/openblas_kernels.py``).

    OPENBLAS_CORETYPE=SkylakeX python -m benchmarks.blas_rows
    OPENBLAS_CORETYPE=Haswell python -m benchmarks.blas_rows

Run it as a module of its own (not after ``import mlxcel``, which sets the variable)."""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

SHAPES = [(512, 1024), (512, 512), (512, 3072), (1536, 512)] * 8  # qkv, o, gate+up, down


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.blas_rows")
    parser.add_argument("--rows", default="1,2,8,32")
    parser.add_argument("--passes", type=int, default=5)
    args = parser.parse_args()
    from threadpoolctl import threadpool_info, threadpool_limits

    threadpool_limits(1)
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(shape).astype(np.float32) for shape in SHAPES]
    out: dict[str, float] = {}
    for rows in (int(r) for r in args.rows.split(",")):
        inputs = {k: rng.standard_normal((rows, k)).astype(np.float32) for k in (512, 1536)}
        best = float("inf")
        for _ in range(args.passes):
            start = time.perf_counter()
            for w in weights:
                inputs[w.shape[0]] @ w
            best = min(best, time.perf_counter() - start)
        out[str(rows)] = round(best * 1e3, 2)
    kernels = [lib.get("architecture") for lib in threadpool_info()
               if lib.get("internal_api") == "openblas" and "numpy" in lib.get("filepath", "")]
    print(json.dumps({"kernels": kernels, "ms_per_step_by_rows": out}))


if __name__ == "__main__":
    main()
