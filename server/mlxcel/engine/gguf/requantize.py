"""Tensors of a file MLX's reader cannot take whole (one holding K-quants, Q5_0, IQ4_NL, ...):
read through llama.cpp's own ``gguf`` package, dequantized with ``gguf.quants`` and quantized
again to an MLX affine width; float tensors stay floats.

MLX's GGUF reader keeps Q4_0, Q4_1 and Q8_0 as affine triples and F32/F16/BF16 as they are
(https://ml-explore.github.io/mlx/build/html/usage/saving_and_loading.html); a file of only those
types never comes here. The MLX width is the type's own nominal width, at least 4 bits (below
that a group-32 affine code loses too much of what the K-quant's super-blocks kept)."""

from __future__ import annotations

import re
from collections import Counter

import gguf
import mlx.core as mx
import numpy as np

from .unsupported import UnsupportedGGUF

FLOAT_TYPES = {
    gguf.GGMLQuantizationType.F32: mx.float32,
    gguf.GGMLQuantizationType.F16: mx.float16,
    gguf.GGMLQuantizationType.BF16: mx.bfloat16,
}
# The types MLX's reader returns usable as they are.
NATIVE_TYPES = frozenset({
    *FLOAT_TYPES, gguf.GGMLQuantizationType.Q4_0, gguf.GGMLQuantizationType.Q4_1,
    gguf.GGMLQuantizationType.Q8_0,
})
GROUP_SIZE = 32
_MLX_WIDTHS = (4, 5, 6, 8)


def mlx_bits(qtype: gguf.GGMLQuantizationType) -> int:
    """The MLX width a converted tensor gets: its nominal width (Q5_K -> 5), at least 4."""
    match = re.search(r"(\d+)", qtype.name)
    nominal = int(match.group(1)) if match else 8
    return next((bits for bits in _MLX_WIDTHS if bits >= nominal), 8)


def check_dequantizable(path: str, name: str, tensor: gguf.ReaderTensor) -> None:
    """Raise ``UnsupportedGGUF`` unless ``gguf.quants`` can dequantize this tensor's type."""
    qtype = tensor.tensor_type
    if qtype in NATIVE_TYPES:
        return
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    try:  # one block is enough to learn whether the type has a dequantizer
        gguf.quants.dequantize(np.asarray(tensor.data).reshape(-1)[:type_size], qtype)
    except NotImplementedError:
        raise UnsupportedGGUF(path, f"tensor {name} has type {qtype.name}, which this server "
                              "cannot read (llama.cpp's gguf package has no dequantizer "
                              "for it)") from None


def requantize(path: str, name: str, tensor: gguf.ReaderTensor) -> dict[str, mx.array]:
    """``name`` (e.g. ``blk.0.ffn_down.weight``) as MLX arrays: a float tensor as it is, a
    quantized matrix as an affine triple (``.weight``/``.scales``/``.biases``), float16 else."""
    check_dequantizable(path, name, tensor)
    values = gguf.quants.dequantize(np.asarray(tensor.data), tensor.tensor_type)
    array = mx.array(values.astype(np.float32))
    if tensor.tensor_type in FLOAT_TYPES:
        return {name: array.astype(FLOAT_TYPES[tensor.tensor_type])}
    if array.ndim != 2 or array.shape[-1] % GROUP_SIZE:
        return {name: array.astype(mx.float16)}
    weight, scales, biases = mx.quantize(array.astype(mx.float16), group_size=GROUP_SIZE,
                                         bits=mlx_bits(tensor.tensor_type))
    base = name.removesuffix(".weight")
    return {f"{base}.weight": weight, f"{base}.scales": scales, f"{base}.biases": biases}


def describe_conversion(converted: dict[str, gguf.GGMLQuantizationType]) -> str:
    """What was converted, for the log: ``62 tensors (Q4_K x 50 -> 4-bit, Q6_K x 12 -> 6-bit)``."""
    counts = Counter(qtype for qtype in converted.values())
    parts = ", ".join(f"{qtype.name} x {count} -> {mlx_bits(qtype)}-bit"
                      for qtype, count in sorted(counts.items(), key=lambda item: item[0].name))
    return f"{len(converted)} tensors ({parts})"
