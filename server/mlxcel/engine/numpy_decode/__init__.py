"""The NumPy decode path: on MLX's CPU backend (Linux without a GPU), dense llama-family models
(llama, mistral, qwen2, qwen3) read prompts and generate tokens with a forward pass in numpy
instead of MLX. It is on by default there (``--no-numpy-decode`` or ``MLXCEL_NUMPY_DECODE=0``
keeps MLX for every step) and never used on Metal or CUDA, where MLX is the fast path. mlx-lm
still loads the model, and prompt caches, sampled requests' processors and the single-sequence
path (speculative decoding) stay on MLX. Greedy tokens equal the MLX path's on every
llama-family fixture and logprobs differ by less than 1e-4 (server/tests/test_numpy_decode.py);
the goldens, recorded on MLX, pass on both paths (CI runs the conformance suite on each). The path
holds a float32 copy of the weights beside MLX's, so it is not used where that copy would crowd
memory (``MEMORY_SHARE``).

Why: on the CPU, MLX dispatches every operation of a step to its stream thread (a few
microseconds each, ~170 operations per step for two layers), and its float32 products go
through the system BLAS's general matrix product, which packs the weight matrix even for a
single row. numpy's bundled OpenBLAS multiplies a row by a matrix at two to three times the
speed, and a numpy step runs in the engine thread with no hand-off. Measured in
benchmarks/README.md ("The NumPy decode path").

``extract`` raises ``Unsupported`` for anything else (quantized weights, other rotary
embeddings, sliding windows, other architectures); those models keep mlx-lm's
``BatchGenerator``, as does every model when the path is turned off.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import cast

import mlx.core as mx
import mlx.nn as nn
import numpy as np
from mlx.utils import tree_flatten

from .batch import NumpyBatch, Response
from .products import blas_threads, product_for
from .weights import Unsupported, Weights, extract

# The path keeps its own float32 copy of the weights beside MLX's: it is not used when that copy
# would take more than this share of the memory available at load (the model decodes on MLX).
MEMORY_SHARE = 0.5

log = logging.getLogger("mlxcel.engine")

__all__ = ["NumpyBatch", "Response", "Unsupported", "Weights", "available", "extract",
           "numpy_weights"]


def available() -> bool:
    """On MLX's CPU backend (the switch itself is ``EngineConfig.numpy_decode``)."""
    return bool(mx.default_device() == mx.cpu)


def numpy_weights(model: nn.Module, wanted: bool, threads: int = 0) -> Weights | None:
    """The weights for the NumPy path when it is ``wanted`` and applies to ``model``, its
    products on ``threads`` BLAS threads (``--threads``; 0: ``blas_threads`` picks)."""
    if not wanted or not available():
        return None
    needed, free = copy_bytes(model), available_memory()
    if free is not None and needed > free * MEMORY_SHARE:
        log.warning("NumPy decode path not used: its float32 copy of the weights (%.1f GiB) "
                    "would take over half the available memory (%.1f GiB); decoding on MLX",
                    needed / 2**30, free / 2**30)
        return None
    try:
        weights = extract(model)
    except Unsupported as exc:
        log.info("NumPy decode path not used: %s", exc)
        return None
    threads = limit_numpy_blas(blas_threads(needed // 4, threads)) or 1
    weights.matmul, weights.threads = product_for(threads), threads
    log.info("decoding on the NumPy path (--no-numpy-decode: MLX), numpy's OpenBLAS on %d "
             "thread(s) (--threads N sets N), kernels: %s", threads,
             numpy_blas_kernels() or "unknown")
    return weights


def copy_bytes(model: nn.Module) -> int:
    """At most what the path's float32 copy of ``model``'s weights takes."""
    flat = cast("list[tuple[str, mx.array]]", tree_flatten(model.parameters()))
    return 4 * sum(value.size for _, value in flat)


def available_memory() -> int | None:
    """Bytes the system can still give (``MemAvailable``), or None where it does not say."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def numpy_blas_kernels() -> str | None:
    """The kernels numpy's OpenBLAS chose for this CPU (``OPENBLAS_CORETYPE`` overrides)."""
    from threadpoolctl import threadpool_info

    for library in threadpool_info():
        if library.get("internal_api") == "openblas" and "numpy" in library.get("filepath", ""):
            return str(library.get("architecture"))
    return None


def limit_numpy_blas(threads: int) -> int:
    """Set the thread count of the BLAS bundled with numpy (only that one: an OpenBLAS that MLX
    was given through ``LD_PRELOAD`` keeps its own); returns ``threads``, or 0 when numpy's BLAS
    was not found. Its own threads spin between calls: see ``products.py``."""
    return numpy_blas_setter()(threads)


def numpy_blas_setter() -> Callable[[int], int]:
    """``limit_numpy_blas`` with numpy's BLAS looked up once (a lookup reads every library the
    process has loaded)."""
    from threadpoolctl import ThreadpoolController

    numpy_root = Path(np.__file__).resolve().parent.parent
    libraries = [library for library in ThreadpoolController().lib_controllers
                 if library.user_api == "blas" and "numpy" in library.filepath
                 and Path(library.filepath).resolve().is_relative_to(numpy_root)]

    def set_threads(threads: int) -> int:
        for library in libraries:
            library.set_num_threads(max(1, threads))
        return threads if libraries else 0

    return set_threads
