"""Rope scaling from a GGUF file, as mlx-lm's ``rope_scaling`` config: linear from
``{arch}.rope.scaling.*``, and Llama 3's (Llama 3.1, 3.2, 3.3) from the ``rope_freqs`` tensor
llama.cpp's converter writes in its place (llama.cpp ``conversion/llama.py``,
``LlamaModel.generate_extra_tensors``: a per-dimension divisor of the rope frequencies).

The tensor does not hold Llama 3's parameters, only their result; the factor is its largest
entry, and the other three are Meta's published values (``low_freq_factor`` 1,
``high_freq_factor`` 4, ``original_max_position_embeddings`` 8192, the ``rope_scaling`` of every
Llama 3.x ``config.json``). The file is served only when those reproduce the tensor.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .unsupported import UnsupportedGGUF

ROPE_FREQS = "rope_freqs.weight"
LLAMA3_PARAMETERS: dict[str, Any] = {"low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                     "original_max_position_embeddings": 8192}


def llama3_factors(head_dim: int, theta: float, factor: float, low_freq_factor: float,
                   high_freq_factor: float, original_max_position_embeddings: int) -> np.ndarray:
    """Each rope frequency's divisor under Llama 3's scaling: 1 for short wavelengths,
    ``factor`` for long ones, a smooth blend between."""
    frequencies = theta ** -(np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    wavelengths = 2 * math.pi / frequencies
    short = original_max_position_embeddings / high_freq_factor
    long = original_max_position_embeddings / low_freq_factor
    smooth = ((original_max_position_embeddings / wavelengths - low_freq_factor)
              / (high_freq_factor - low_freq_factor))
    blended = 1 / ((1 - smooth) / factor + smooth)
    return np.where(wavelengths < short, 1.0, np.where(wavelengths > long, factor, blended))


def _llama3(path: str, factors: np.ndarray, head_dim: int, theta: float) -> dict[str, Any]:
    factor = float(factors.max())
    expected = llama3_factors(head_dim, theta, factor, **LLAMA3_PARAMETERS)
    if factors.shape != expected.shape or not np.allclose(factors, expected, rtol=1e-4):
        raise UnsupportedGGUF(path, f"{ROPE_FREQS} is not Llama 3's rope scaling with its "
                              "published parameters, and no other is supported")
    return {"rope_type": "llama3", "factor": factor, **LLAMA3_PARAMETERS}


def rope_scaling(path: str, metadata: dict[str, Any], arch: str, tensors: dict[str, Any],
                 head_dim: int, theta: float) -> dict[str, Any] | None:
    """mlx-lm's ``rope_scaling`` for this file, None without scaling, or ``UnsupportedGGUF``."""
    kind = metadata.get(f"{arch}.rope.scaling.type")
    if ROPE_FREQS in tensors:
        if kind not in (None, "none"):
            raise UnsupportedGGUF(path, f"{ROPE_FREQS} together with rope scaling {kind!r}")
        factors = np.asarray(tensors[ROPE_FREQS], dtype=np.float64).reshape(-1)
        return _llama3(path, factors, head_dim, theta)
    if kind in (None, "none"):
        return None
    factor = metadata.get(f"{arch}.rope.scaling.factor")
    if kind == "linear" and isinstance(factor, (int, float)):
        return {"type": "linear", "factor": float(factor)}
    raise UnsupportedGGUF(path, f"rope scaling {kind!r} is not supported")
