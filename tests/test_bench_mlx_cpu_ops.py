"""benchmarks/mlx_cpu_ops.py runs, measures every operation it names, and its plain-operation
spellings of the fused kernels compute what the kernels compute (so the comparison is fair)."""

from __future__ import annotations

from benchmarks import mlx_cpu_ops


def test_every_operation_is_timed_and_tabled() -> None:
    rows = mlx_cpu_ops.run(repeat=1, vocab=64, elements=1024)
    groups = [row.group for row in rows]
    assert groups.count("products") == 6 and groups.count("element-wise") == 2
    assert groups.count("fused kernels") == 5
    assert all(row.mlx_us >= 0 for row in rows)
    assert all("GFLOP/s" in row.rate for row in rows if row.group == "products")
    table = mlx_cpu_ops.table(rows)
    assert table.count("\n") == len(rows) + 1 and "LM head 64x576, 1 row(s)" in table
