"""Large matrix products split by output columns over a few threads, each running numpy's
BLAS single-threaded (numpy releases the GIL inside the product).

Why not BLAS's own threads: numpy's bundled OpenBLAS spin-waits between calls, and on a
machine whose cores are shared (the event loop, the clients, other processes) a descheduled
partner turned that into 20-35x the CPU per step (benchmarks/README.md, "The NumPy decode
path"). These workers block on a queue instead, and small products never leave the caller.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

import numpy as np

# Products below this many multiply-adds stay on the calling thread: a hand-off costs tens of
# microseconds, a product this size about 0.1 ms on one core.
MIN_WORK = 1 << 21
# Up to this many rows, one matrix-vector product per row: numpy's OpenBLAS packs the weights
# for a matrix product, and for 2-3 rows that cost 2.5-3x a single row's; row by row it is
# 1.6-1.8x (the weights are still in cache for the second row). From 8 rows the matrix product
# wins. One row as a vector is also ~12% faster than as a (1, n) matrix.
MAX_ROWS_AS_VECTORS = 6
# ... for weights of at least this many elements: below it the packing is cheap and the extra
# calls cost more (the tiny fixture's batch-4 step took 1.23x as long row by row).
MIN_VECTOR_WEIGHTS = 1 << 16


def product(x: np.ndarray, w_t: np.ndarray) -> np.ndarray:
    """``x @ w_t`` on this thread, row by row for a few rows (see ``MAX_ROWS_AS_VECTORS``)."""
    if x.ndim != 2 or x.shape[0] > MAX_ROWS_AS_VECTORS or w_t.size < MIN_VECTOR_WEIGHTS:
        return x @ w_t
    out = np.empty((x.shape[0], w_t.shape[1]), np.result_type(x, w_t))
    for row in range(x.shape[0]):
        np.matmul(x[row], w_t, out=out[row])
    return out


class Workers:
    """``threads - 1`` daemon threads; the caller takes the first part itself."""

    def __init__(self, threads: int) -> None:
        self.threads = max(1, threads)
        self._jobs: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        for index in range(self.threads - 1):
            threading.Thread(target=self._run, name=f"mlxcel-numpy-{index}",
                             daemon=True).start()

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            job()

    def matmul(self, x: np.ndarray, w_t: np.ndarray) -> np.ndarray:
        """``x @ w_t`` (``w_t`` ``(in, out)``), split by output columns when large."""
        rows, inner = x.shape[0] if x.ndim > 1 else 1, x.shape[-1]
        cols = w_t.shape[1]
        if self.threads == 1 or rows * inner * cols < MIN_WORK or cols < 2 * self.threads:
            return product(x, w_t)
        out = np.empty((*x.shape[:-1], cols), np.result_type(x, w_t))
        bounds = np.linspace(0, cols, self.threads + 1).astype(int)
        done = threading.Semaphore(0)
        errors: list[BaseException] = []

        def part(a: int, b: int) -> Callable[[], None]:
            def run() -> None:
                try:
                    out[..., a:b] = product(x, w_t[:, a:b])
                except BaseException as exc:  # noqa: BLE001 - re-raised by the caller
                    errors.append(exc)
                finally:
                    done.release()
            return run

        for a, b in zip(bounds[1:-1], bounds[2:], strict=True):
            self._jobs.put(part(int(a), int(b)))
        out[..., :bounds[1]] = product(x, w_t[:, :bounds[1]])
        for _ in range(self.threads - 1):
            done.acquire()
        if errors:
            raise errors[0]
        return out

    def close(self) -> None:
        for _ in range(self.threads - 1):
            self._jobs.put(None)
