"""Why MLX is slow on a Linux CPU: the operations a decode step is made of, timed one by one on
the current MLX device, with NumPy beside them where it computes the same thing. This is the
evidence an upstream MLX report needs (benchmarks/README.md, "Why MLX is slow on a Linux CPU").

    python -m benchmarks.mlx_cpu_ops            # about half a minute on 2 cores
    LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 python -m benchmarks.mlx_cpu_ops

Times are CPU time of the whole process (MLX's stream thread included), medians over calls:
on a shared machine wall time moves with the neighbours, CPU time much less. Three findings,
each a row group of the table it prints:

- **products by row count**: float32 ``x @ w.T`` for 1 and 8 rows against SmolLM2-135M's
  shapes (hidden 576, MLP 1,536, vocabulary 49,152); a decode step of one stream is all
  one-row products;
- **element-wise functions**: ``exp`` per element against a multiply-add over the same array;
- **fused kernels**: ``mx.fast.rms_norm`` and ``mx.fast.rope`` at one decode position, against
  the same arithmetic written out in plain MLX operations.
"""

from __future__ import annotations

import os

# One BLAS thread for NumPy, set before numpy loads its OpenBLAS: on a shared machine a second
# thread's spin-waiting would be counted as CPU time of the product. Only when run as a script:
# an importer's environment (a test run's) is left as it is.
if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from functools import partial  # noqa: E402
from importlib.metadata import version  # noqa: E402

import mlx.core as mx  # noqa: E402
import numpy as np  # noqa: E402

# SmolLM2-135M-Instruct's shapes (its config: hidden 576, intermediate 1,536, 9 heads of 64,
# vocabulary 49,152): the real model this project serves on a Linux CPU.
HIDDEN, MLP, HEADS, HEAD_DIM, VOCAB = 576, 1536, 9, 64, 49152


@dataclass
class Row:
    group: str
    what: str
    mlx_us: float
    numpy_us: float | None = None
    rate: str = ""


def median_us(fn: Callable[[], object], repeat: int) -> float:
    """Median CPU time of the process during one call of ``fn``, in microseconds, after two
    warm-up calls."""
    fn()
    fn()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e6


def _mlx(op: Callable[[], mx.array]) -> Callable[[], None]:
    return lambda: mx.eval(op())


def products(repeat: int, vocab: int = VOCAB) -> list[Row]:
    """``x @ w.T`` of 1 and 8 rows for each weight shape, GFLOP/s in MLX and NumPy."""
    rows = []
    for out_dim, in_dim, name in ((MLP, HIDDEN, "MLP up"), (HIDDEN, MLP, "MLP down"),
                                  (vocab, HIDDEN, "LM head")):
        weight = mx.random.normal((out_dim, in_dim))
        weight_np = np.array(weight)
        mx.eval(weight)
        for n_rows in (1, 8):
            x = mx.random.normal((n_rows, in_dim))
            x_np = np.array(x)
            mlx_us = median_us(_mlx(partial(mx.matmul, x, weight.T)), repeat)
            np_us = median_us(partial(np.matmul, x_np, weight_np.T), repeat)
            flop = 2 * n_rows * in_dim * out_dim
            rows.append(Row("products", f"{name} {out_dim}x{in_dim}, {n_rows} row(s)", mlx_us,
                            np_us, f"MLX {flop / mlx_us / 1e3:.1f} GFLOP/s, "
                            f"NumPy {flop / np_us / 1e3:.1f}"))
    return rows


def elementwise(repeat: int, size: int = 1 << 20) -> list[Row]:
    """``exp`` against a multiply-add over ``size`` float32 values, nanoseconds per element."""
    x = mx.random.uniform(-4, 4, (size,))
    x_np = np.array(x)
    mx.eval(x)
    out = []
    for what, op, op_np in (("exp", lambda: mx.exp(x), lambda: np.exp(x_np)),
                            ("x * x + x", lambda: x * x + x, lambda: x_np * x_np + x_np)):
        mlx_us = median_us(_mlx(op), repeat)
        np_us = median_us(op_np, repeat)
        out.append(Row("element-wise", f"{what}, {size:,} float32", mlx_us, np_us,
                       f"MLX {mlx_us * 1e3 / size:.2f} ns/element, "
                       f"NumPy {np_us * 1e3 / size:.2f}"))
    return out


def _rms_norm_ops(x: mx.array, w: mx.array) -> mx.array:
    return x * mx.rsqrt(mx.mean(x * x, axis=-1, keepdims=True) + 1e-5) * w


def _rope_ops(x: mx.array, offset: int) -> mx.array:
    """Non-traditional rotary embedding of one position in plain operations (the arithmetic
    of ``mx.fast.rope(x, 64, traditional=False, base=10000, scale=1, offset=offset)``)."""
    half = HEAD_DIM // 2
    freqs = mx.power(10000.0, -mx.arange(half, dtype=mx.float32) / half)
    angle = offset * freqs
    cos, sin = mx.cos(angle), mx.sin(angle)
    x1, x2 = x[..., :half], x[..., half:]
    return mx.concatenate([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1)


def fused(repeat: int) -> list[Row]:
    """The fused kernels at one decode position, against plain operations doing the same."""
    x = mx.random.normal((1, 1, HIDDEN))
    w = mx.ones((HIDDEN,))
    q = mx.random.normal((1, HEADS, 1, HEAD_DIM))
    mx.eval(x, w, q)
    # Both spellings agree before they are timed: the comparison is of equal work.
    assert mx.allclose(mx.fast.rms_norm(x, w, 1e-5), _rms_norm_ops(x, w), atol=1e-5).item()
    rope = mx.fast.rope(q, HEAD_DIM, traditional=False, base=10000.0, scale=1.0, offset=100)
    assert mx.allclose(rope, _rope_ops(q, 100), atol=1e-4).item()
    cases = (
        ("rms_norm (1, 1, 576): mx.fast", lambda: mx.fast.rms_norm(x, w, 1e-5)),
        ("rms_norm (1, 1, 576): plain ops", lambda: _rms_norm_ops(x, w)),
        ("rope (1, 9, 1, 64): mx.fast", lambda: mx.fast.rope(
            q, HEAD_DIM, traditional=False, base=10000.0, scale=1.0, offset=100)),
        ("rope (1, 9, 1, 64): plain ops", lambda: _rope_ops(q, 100)),
        ("one add (1, 1, 576), for scale", lambda: x + x),
    )
    return [Row("fused kernels", what, median_us(_mlx(op), repeat)) for what, op in cases]


def table(rows: list[Row]) -> str:
    lines = ["| group | operation | MLX CPU µs | NumPy CPU µs | rate |", "|---|---|---|---|---|"]
    for row in rows:
        np_cell = "—" if row.numpy_us is None else f"{row.numpy_us:,.1f}"
        lines.append(f"| {row.group} | {row.what} | {row.mlx_us:,.1f} | {np_cell} | "
                     f"{row.rate} |")
    return "\n".join(lines)


def run(repeat: int, vocab: int = VOCAB, elements: int = 1 << 20) -> list[Row]:
    return products(repeat, vocab) + elementwise(repeat, elements) + fused(repeat)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.mlx_cpu_ops",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed calls per operation")
    args = parser.parse_args(argv)
    print(f"MLX {version('mlx')} on {mx.default_device()}, NumPy {np.__version__}, "
          f"LD_PRELOAD={os.environ.get('LD_PRELOAD', '(none)')}, {os.cpu_count()} CPUs; "
          f"medians of {args.repeat} calls\n")
    print(table(run(args.repeat)))


if __name__ == "__main__":
    main()
