"""Which kernels OpenBLAS runs, chosen before numpy loads its own (from ``mlxcel/__init__.py``).

On an x86-64 CPU with AVX-512, OpenBLAS picks its AVX-512 kernels (``SkylakeX`` and later). For
the products of decoding, 1 to 32 rows times a weight matrix, its AVX2 ``Haswell`` kernels were
as fast or faster where it matters (``benchmarks/README.md``, "OpenBLAS's kernels"):

- Intel Xeon, 2 cores (2026-12-03): the 32 products of a ``bench`` step, one thread, 8 rows
  16.3 against 27.3 ms, 32 rows 30.7 against 37.9; served, 8 streams 224 against 148 tok/s and
  32 streams 585 against 529;
- AMD EPYC, 2 cores (2026-12-03): a whole ``bench`` step, 1 row 5.1-5.6 against 4.9-6.0 ms,
  8 rows 14.2-15.7 against 16.0-17.0, 32 rows 30.7-32.3 against 23.8-27.5 (the one loss).

So where the CPU has AVX-512 and ``OPENBLAS_CORETYPE`` is not set, mlxcel sets it to
``Haswell`` (every such CPU has AVX2 and FMA); a value the user sets wins (``SkylakeX`` restores
OpenBLAS's choice). It only takes effect when numpy is not loaded yet, as in ``mlxcel-server``
and ``python -m mlxcel``; the server logs the kernels numpy's OpenBLAS runs.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Mapping

VARIABLE = "OPENBLAS_CORETYPE"
KERNELS = "Haswell"
NEEDS = frozenset({"avx512f", "avx2", "fma"})


def choice(environ: Mapping[str, str], cpu_flags: frozenset[str], numpy_loaded: bool,
           machine: str) -> str | None:
    """The core type to set, or None to leave OpenBLAS's own choice."""
    if VARIABLE in environ or numpy_loaded or machine not in ("x86_64", "AMD64"):
        return None
    return KERNELS if NEEDS <= cpu_flags else None


def cpu_flags(path: str = "/proc/cpuinfo") -> frozenset[str]:
    """The first processor's flags (empty where the system does not say)."""
    try:
        with open(path, encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def prefer_small_batch_kernels() -> str | None:
    """Set ``OPENBLAS_CORETYPE`` where ``choice`` says so; the value set, or None."""
    value = choice(os.environ, cpu_flags(), "numpy" in sys.modules, platform.machine())
    if value is not None:
        os.environ[VARIABLE] = value
    return value
