"""How the NumPy path multiplies rows by a weight matrix: numpy's bundled OpenBLAS, row by row
for a few rows (``product``), on as many of OpenBLAS's own threads as the model is worth
(``blas_threads``).

Threads: OpenBLAS splits a product over its threads in C, with no hand-off through Python; its
threads spin-wait between calls for up to ~0.1 s, then sleep. Measured on a 2-core machine
(benchmarks/README.md, "Threads"), two of them made a `bench` step (26M parameters) 1.2-1.8x as
fast as one at 1, 8 and 32 rows, and served 1.3-1.5x the tokens per second; the `tiny` fixture
(230k parameters), whose step is bound by the event loop rather than arithmetic, lost ~10% to
the spinning partner, so a model below ``MIN_THREADED_PARAMETERS`` keeps one thread. Where other
processes hold the cores, a spinning partner that is descheduled stalls every product:
``--threads 1`` (``MLXCEL_NUMPY_THREADS=1``) keeps one thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial

import numpy as np

# Threads by default: one per core the process may use, at most this many.
MAX_THREADS = 8
# Models with fewer parameters (multiply-adds per token) keep numpy's BLAS on one thread.
MIN_THREADED_PARAMETERS = 1 << 22
# Up to this many rows, one matrix-vector product per row: numpy's OpenBLAS packs the weights
# for a matrix product, and on one thread for 2-3 rows that cost 2.5-3x a single row's; row by
# row it is 1.6-1.8x (the weights are still in cache for the second row). From 8 rows the
# matrix product wins. One row as a vector is also ~12% faster than as a (1, n) matrix. On two
# threads the matrix product of 8 rows wins from 3 rows (a `bench` step of 4 rows 15-16 ms
# against 20-25 row by row, an earlier measurement; below, padded rows).
MAX_ROWS_AS_VECTORS = 6
MAX_ROWS_AS_VECTORS_THREADED = 2
# numpy's OpenBLAS (`Haswell` kernels) multiplies some row counts faster than fewer rows: on two
# threads 8 or 16 rows by `bench`'s weights faster than 3-7 or 11-15 (products 7.2-8.7 ms padded
# to 8 against 10.2-13.0 for 5-7 rows; 9.6-11.5 padded to 16 against 11.1-14.6; 9-10 rows gained
# nothing; in a later run 3 / 4 rows took 8.4-9.1 / 8.8-9.1 ms against 7.7-8.0 for 8),
# on one thread a multiple of 4 than 2 or 3 rows fewer (0.71-1.02x the time from 7 to 31 rows;
# 1 short was mixed, 0.72-1.10x). Such products run on zero rows added, below these counts (one
# thread, several). A `bench` step of 5 / 6 / 7 / 11 / 13 rows on two threads took 11-12 / 12 /
# 12-13 / 15-16 / 17-19 ms against 15 / 18 / 16 / 19 / 19-21, and 6 streams served 1.18x the
# tokens per second (4 interleaved rounds, 1.16-1.29x; 11 streams 1.02x). A step of 3 / 4 rows
# took 9.0 / 9.6 ms padded against 10.3 / 10.9 (medians of 6 interleaved rounds; row by row 8.8
# / 10.1: as fast at 3 rows, slower at 4).
PAD_ROWS_BELOW = (32, 16)
# ... for weights of at least this many elements: below it the packing is cheap and the extra
# calls cost more (the tiny fixture's batch-4 step took 1.23x as long row by row).
MIN_VECTOR_WEIGHTS = 1 << 16

MatMul = Callable[[np.ndarray, np.ndarray], np.ndarray]


def product(x: np.ndarray, w_t: np.ndarray, max_rows: int = MAX_ROWS_AS_VECTORS,
            threads: int = 1) -> np.ndarray:
    """``x @ w_t``, row by row for up to ``max_rows`` rows (see ``MAX_ROWS_AS_VECTORS``), else
    as ``padded_rows`` rows on ``threads`` BLAS threads (see ``PAD_ROWS_BELOW``)."""
    if x.ndim != 2 or w_t.size < MIN_VECTOR_WEIGHTS:
        return x @ w_t
    rows = x.shape[0]
    if rows > max_rows:
        size = padded_rows(rows, threads)
        if size == rows:
            return x @ w_t
        padded = np.zeros((size, x.shape[1]), x.dtype)
        padded[:rows] = x
        return (padded @ w_t)[:rows]
    out = np.empty((rows, w_t.shape[1]), np.result_type(x, w_t))
    for row in range(rows):
        np.matmul(x[row], w_t, out=out[row])
    return out


def padded_rows(rows: int, threads: int = 1) -> int:
    """The rows to multiply ``rows`` rows as: on several threads 3-7 as 8 and 11-15 as 16, on
    one thread 7-31 rows up to the next multiple of 4 when 2 or 3 short of it (below
    ``PAD_ROWS_BELOW``); any other count as itself."""
    if threads > 1:
        step, pad = 8, MAX_ROWS_AS_VECTORS_THREADED < rows < PAD_ROWS_BELOW[1] and rows % 8 >= 3
    else:
        step, pad = 4, MAX_ROWS_AS_VECTORS < rows < PAD_ROWS_BELOW[0] and rows % 4 >= 2
    return -(-rows // step) * step if pad else rows


def product_for(threads: int) -> MatMul:
    """``product`` as it runs best on ``threads`` BLAS threads."""
    if threads <= 1:
        return product
    return partial(product, max_rows=MAX_ROWS_AS_VECTORS_THREADED, threads=threads)


def blas_threads(parameters: int, setting: int = 0, cores: int | None = None) -> int:
    """Threads for numpy's BLAS on the NumPy path: ``setting`` (``--threads``) when above 0,
    else one per core (at most ``MAX_THREADS``) for a model of at least
    ``MIN_THREADED_PARAMETERS`` parameters, else one."""
    if setting > 0:
        return setting
    if parameters < MIN_THREADED_PARAMETERS:
        return 1
    return max(1, min(cores if cores is not None else usable_cores(), MAX_THREADS))


def usable_cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1
