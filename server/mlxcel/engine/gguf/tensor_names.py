"""GGUF tensor names onto the parameter paths of the mlx-lm model, with llama.cpp's own name table
(``gguf.get_tensor_name_map``), and the undoing of its rope row permutation.

The table maps Hugging Face module paths (which mlx-lm's models keep) to GGUF names, so it is
read backwards: each parameter of the built model asks for its GGUF name.
"""

from __future__ import annotations

from collections.abc import Iterable

import gguf
import mlx.core as mx

from .unsupported import UnsupportedGGUF

# GGUF ``.weight``/``.bias``; the ``.scales``/``.biases`` MLX's reader adds to a quantized weight.
_SUFFIXES = ("weight", "bias", "scales", "biases")


def gguf_to_module_paths(arch: gguf.MODEL_ARCH, layers: int,
                         parameter_paths: Iterable[str]) -> dict[str, str]:
    """GGUF tensor stem (``blk.0.attn_q``) -> the model's module path
    (``model.layers.0.self_attn.q_proj``), for every parameter of the model."""
    names = gguf.get_tensor_name_map(arch, layers)
    table: dict[str, str] = {}
    for path in parameter_paths:
        module = path.rpartition(".")[0]
        stem = names.get_name(module)
        if stem is not None:
            table[stem] = module
    return table


def missing_tensors(arch: gguf.MODEL_ARCH, layers: int, parameter_paths: Iterable[str],
                    present_stems: set[str]) -> list[str]:
    """The GGUF stems (or, where llama.cpp has no name for one, the module paths) the model needs
    and the file does not hold."""
    names = gguf.get_tensor_name_map(arch, layers)
    missing = set()
    for path in parameter_paths:
        module = path.rpartition(".")[0]
        stem = names.get_name(module)
        if stem is None or stem not in present_stems:
            missing.add(stem or module)
    return sorted(missing)


def undo_rope_permutation(array: mx.array, heads: int) -> mx.array:
    """Rows back in Hugging Face order: llama.cpp wrote
    ``HF.reshape(heads, 2, rows/heads/2, ...).swapaxes(1, 2)``; a row permutation, so the same
    holds for a weight, its scales and biases, and a bias."""
    rows, rest = array.shape[0], array.shape[1:]
    half = rows // heads // 2
    return array.reshape(heads, half, 2, *rest).swapaxes(1, 2).reshape(array.shape)


def rename_tensors(path: str, tensors: dict[str, mx.array], table: dict[str, str],
                   permuted_heads: dict[str, int]) -> dict[str, mx.array]:
    """``tensors`` under the model's parameter paths; ``permuted_heads`` maps the GGUF stems whose
    rows llama.cpp permuted (``attn_q``, ``attn_k`` of every block) to their head count."""
    renamed: dict[str, mx.array] = {}
    for name, array in tensors.items():
        stem, _, suffix = name.rpartition(".")
        if suffix not in _SUFFIXES or stem not in table:
            raise UnsupportedGGUF(path, f"tensor {name} has no place in the model")
        heads = permuted_heads.get(stem.rpartition(".")[2])
        renamed[f"{table[stem]}.{suffix}"] = (array if heads is None
                                             else undo_rope_permutation(array, heads))
    return renamed
