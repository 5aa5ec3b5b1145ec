"""Faster decode-step pieces for MLX's CPU backend: the SwiGLU activation and single-token
attention, with ``exp`` built from arithmetic the compiler vectorizes.

MLX's CPU backend evaluates transcendental functions one element at a time: ``mx.exp`` costs
about 14 ns per element here (numpy's vectorized ``exp``, 0.5 ns), so in a decode step at batch
32 the MLP's ``silu`` alone took about 7 of 41 ms and the attention's softmax a few more
(``benchmarks/step_profile.py`` and the measurements in benchmarks/README.md). Here ``exp`` is
2^n · 2^f (f in [-0.5, 0.5]) with a degree-7 polynomial for 2^f and the exponent written into
the float's bits, compiled into one loop: its largest relative error against float64 equals
``mx.exp``'s (about 9e-7), at about 3 ns per element.

``install`` swaps these in for the loaded model's architecture module (its ``swiglu`` and
``scaled_dot_product_attention``, as mlx-lm's model modules import them), on the CPU only: on a
GPU MLX's own kernels are already vectorized. Results are not bit-identical to mlx-lm's (about a
third of the activations differ in the last bit), so ``--no-cpu-kernels`` (or
``MLXCEL_CPU_KERNELS=0``, which ``install`` also honours) keeps mlx-lm's functions. Attention
falls back to mlx-lm's for prompts (more than one query token), quantized caches, attention
sinks, masks that are not boolean, and small batches (``MIN_SCORES``); SwiGLU for fewer than
``MIN_ACTIVATIONS`` elements.
"""

from __future__ import annotations

import logging
import os
import sys
from collections import Counter
from collections.abc import Callable
from functools import partial
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models import activations, base

log = logging.getLogger("mlxcel.engine")

# Below this many attention scores per layer (batch x query heads x cached positions) the few
# extra graph nodes of the grouped form cost more than the faster exp saves (a single stream
# decoded about 5% slower with it); measured on benchmarks/step_profile.py's bench model.
MIN_SCORES = 16384
# A single stream's decode step (one row of activations) keeps mlx-lm's compiled SwiGLU: in A/B
# runs it decoded no faster with this one, and possibly a little slower.
MIN_ACTIVATIONS = 4096
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
ENV = "MLXCEL_CPU_KERNELS"


def _exp_parts(x: mx.array) -> tuple[mx.array, mx.array]:
    """e^x for float32 ``x`` as a float32 mantissa ``p`` and the int32 bits of the float 2^n
    (e^x = p * 2^n), with no transcendental call: meant to run compiled. The bits are returned
    rather than the float because reinterpreting them (``view``) has no shapeless form."""
    x = mx.clip(x * LOG2E, -126.0, 127.0)
    n = mx.round(x)
    t = (x - n) * LN2  # in [-ln2/2, ln2/2]: e^t by its Taylor series to degree 7
    p = 1 + t * (1 + t * (0.5 + t * (1 / 6 + t * (1 / 24 + t * (1 / 120 + t * (
        1 / 720 + t * (1 / 5040)))))))
    return p, (n.astype(mx.int32) + 127) << 23


def _exp(x: mx.array) -> mx.array:
    p, bits = _exp_parts(x)
    return p * bits.view(mx.float32)


# Compiled once per input shape: only where the shapes a server sees are few (one per batch
# size). Shapes that follow the prompt or the context length go through the shapeless pieces
# below, split around the reinterpretation: MLX keeps every traced shape of a compiled function
# (about 40 KB each, searched one by one), and a trace costs about 0.3 ms.
exp = mx.compile(_exp)
shapeless = partial(mx.compile, shapeless=True)


@mx.compile
def _swiglu(gate: mx.array, x: mx.array) -> mx.array:
    g = gate.astype(mx.float32)  # _exp works on float32 bits; half-precision models get
    return (g / (1 + _exp(-g))).astype(x.dtype) * x  # their own dtype back


@shapeless
def _silu_parts(gate: mx.array) -> tuple[mx.array, mx.array]:
    return _exp_parts(-gate.astype(mx.float32))


@shapeless
def _swiglu_finish(gate: mx.array, x: mx.array, p: mx.array, two_n: mx.array) -> mx.array:
    return (gate.astype(mx.float32) / (1 + p * two_n)).astype(x.dtype) * x


def _swiglu_any_shape(gate: mx.array, x: mx.array) -> mx.array:
    p, bits = _silu_parts(gate)
    return _swiglu_finish(gate, x, p, bits.view(mx.float32))


def swiglu(gate: mx.array, x: mx.array) -> mx.array:
    """silu(gate) * x, as ``mlx_lm.models.activations.swiglu``; mlx-lm's own below
    ``MIN_ACTIVATIONS`` elements, where the saving is too small to measure. A decode step's
    (one position per sequence) is compiled for its shape; a prompt's, of any length, is not."""
    if gate.size < MIN_ACTIVATIONS:
        return activations.swiglu(gate, x)
    if gate.ndim >= 3 and gate.shape[1] == 1:
        return _swiglu(gate, x)
    return _swiglu_any_shape(gate, x)


@shapeless
def _softmax_parts(scores: mx.array) -> tuple[mx.array, mx.array]:
    return _exp_parts(scores - mx.max(scores, axis=-1, keepdims=True))


@shapeless
def _softmax_finish(scores: mx.array, p: mx.array, two_n: mx.array) -> mx.array:
    weights = mx.where(scores == -mx.inf, 0.0, p * two_n)  # masked out: exactly 0
    return weights / mx.sum(weights, axis=-1, keepdims=True)


def _softmax(scores: mx.array) -> mx.array:
    """Softmax over the last axis, whose length (the context) changes at every step."""
    p, bits = _softmax_parts(scores)
    return _softmax_finish(scores, p, bits.view(mx.float32))


def decode_attention(
    queries: mx.array,
    keys: mx.array,
    values: mx.array,
    cache: Any,
    scale: float,
    mask: Any,
    sinks: mx.array | None = None,
) -> mx.array:
    """``mlx_lm.models.base.scaled_dot_product_attention`` for one query token per sequence:
    grouped-query products, the boolean mask, and the vectorized softmax."""
    plain = mask is None or (isinstance(mask, mx.array) and mask.dtype == mx.bool_)
    small = queries.shape[0] * queries.shape[1] * keys.shape[2] < MIN_SCORES
    if (queries.shape[2] != 1 or sinks is not None or hasattr(cache, "bits") or not plain
            or small):
        return base.scaled_dot_product_attention(queries, keys, values, cache, scale, mask, sinks)
    batch, q_heads, _, dim = queries.shape
    kv_heads = keys.shape[1]
    grouped = (queries * scale).reshape(batch, kv_heads, q_heads // kv_heads, dim)
    scores = grouped @ keys.swapaxes(-1, -2)  # (batch, kv_heads, group, length)
    if mask is not None:
        scores = mx.where(mask.reshape(mask.shape[0], 1, 1, mask.shape[-1]), scores, -mx.inf)
    out = _softmax(scores.astype(mx.float32)).astype(values.dtype) @ values
    return out.reshape(batch, q_heads, 1, dim)


@mx.compile
def _rms_norm(x: mx.array, weight: mx.array, eps: float) -> mx.array:
    x32 = x.astype(mx.float32)
    scale = mx.rsqrt(mx.mean(mx.square(x32), axis=-1, keepdims=True) + eps)
    return (x32 * scale * weight.astype(mx.float32)).astype(x.dtype)


class DecodeRMSNorm(nn.RMSNorm):
    """``nn.RMSNorm`` whose decode-step calls (one position per sequence) run compiled: MLX's
    CPU ``fast.rms_norm`` costs about 55 us even on 512 values, this about 12 (30 at batch 8).
    Prompts keep ``fast.rms_norm`` (one compiled graph per shape would pile up)."""

    def __call__(self, x: mx.array) -> mx.array:
        if x.ndim < 3 or x.shape[1] != 1:
            return super().__call__(x)
        return _rms_norm(x, self["weight"], self.eps)


@mx.compile
def _rope_tables(positions: mx.array, freqs: mx.array, signs: mx.array) -> tuple[mx.array,
                                                                                 mx.array]:
    angles = positions * freqs  # in float64: a float32 angle is off by up to 1e-3 rad at 30k
    return mx.cos(angles).astype(mx.float32), (mx.sin(angles) * signs).astype(mx.float32)


def _rotate(x: mx.array, traditional: bool) -> mx.array:
    """The partner of each element (its pair swapped), the sign left to the sine table."""
    shape, half = x.shape, x.shape[-1] // 2
    pairs = x.reshape(*shape[:-1], half, 2) if traditional else x.reshape(*shape[:-1], 2, half)
    return (pairs[..., ::-1] if traditional else pairs[..., ::-1, :]).reshape(shape)


@mx.compile
def _rope_apply(x: mx.array, cos: mx.array, sin: mx.array) -> mx.array:
    return x * cos.astype(x.dtype) + _rotate(x, False) * sin.astype(x.dtype)


@mx.compile
def _rope_apply_traditional(x: mx.array, cos: mx.array, sin: mx.array) -> mx.array:
    return x * cos.astype(x.dtype) + _rotate(x, True) * sin.astype(x.dtype)


class DecodeRoPE(nn.RoPE):
    """``nn.RoPE`` for one position per sequence, from a cosine and a sine table per call (MLX's
    CPU ``fast.rope`` computes them for every element, about 140 us for 8 heads of 64; this
    about 40). Tables for a whole-number ``offset`` (one sequence) are kept for the next call at
    the same position, so a layer's keys reuse its queries'; an array of offsets (a batch) gets
    new tables on every call, since MLX arrays can change in place (``offset += 1``) and only an
    evaluation could tell. Prompts, partial rotations and other shapes keep ``fast.rope``."""

    def __call__(self, x: mx.array, offset: Any = 0) -> mx.array:
        if x.ndim != 4 or x.shape[2] != 1 or x.shape[-1] != self.dims or self.dims % 2:
            return super().__call__(x, offset)
        if isinstance(offset, mx.array):
            cos, sin = self._tables(offset.astype(mx.float64).reshape(-1, 1, 1, 1))
        else:
            memo = self.__dict__.get("_mlxcel_tables")
            if memo is None or memo[0] != offset:
                memo = (int(offset), *self._tables(mx.array(float(offset), dtype=mx.float64)))
                object.__setattr__(self, "_mlxcel_tables", memo)  # not a parameter
            cos, sin = memo[1], memo[2]
        apply = _rope_apply_traditional if self.traditional else _rope_apply
        return apply(x, cos, sin)

    def _tables(self, positions: mx.array) -> tuple[mx.array, mx.array]:
        constants = self.__dict__.get("_mlxcel_freqs")
        if constants is None:
            half = self.dims // 2
            inv = [self.base ** (-2.0 * i / self.dims) for i in range(half)]
            if self.traditional:  # pairs (0, 1), (2, 3), ...: each frequency twice, in place
                freqs, signs = [f for f in inv for _ in (0, 1)], [-1.0, 1.0] * half
            else:  # pairs (i, i + half)
                freqs, signs = inv + inv, [-1.0] * half + [1.0] * half
            constants = (mx.array(freqs, dtype=mx.float64), mx.array(signs, dtype=mx.float64))
            object.__setattr__(self, "_mlxcel_freqs", constants)
        return _rope_tables(positions * self.scale, *constants)


# Modules of exactly these classes change class in place (their weights stay as they are).
MODULES: dict[type[nn.Module], type[nn.Module]] = {
    nn.RMSNorm: DecodeRMSNorm,
    nn.RoPE: DecodeRoPE,
}

REPLACEMENTS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "swiglu": (activations.swiglu, swiglu),
    "scaled_dot_product_attention": (base.scaled_dot_product_attention, decode_attention),
}


def enabled() -> bool:
    return os.environ.get(ENV, "1") != "0" and mx.default_device() == mx.cpu


def install(model: nn.Module) -> list[str]:
    """Swap the replacements into the modules that define ``model``'s layers, where they hold
    mlx-lm's own functions, and change the class of its ``MODULES``; returns what was swapped,
    as ``module.name`` and ``Class xCount``."""
    if not enabled():
        return []
    names = {type(m).__module__ for _, m in model.named_modules()} | {type(model).__module__}
    swapped = []
    for name in sorted(names):
        module = sys.modules.get(name)
        if module is None or not name.startswith("mlx_lm.models."):
            continue
        for attr, (original, replacement) in REPLACEMENTS.items():
            if getattr(module, attr, None) is original:
                setattr(module, attr, replacement)
                swapped.append(f"{name}.{attr}")
    changed: Counter[str] = Counter()
    for _, layer in model.named_modules():
        kind = MODULES.get(type(layer))
        if kind is not None:
            layer.__class__ = kind
            changed[kind.__name__] += 1
    swapped += [f"{name} x{count}" for name, count in changed.items()]
    if swapped:
        log.info("CPU kernels for %s (%s=0 keeps mlx-lm's)", ", ".join(swapped), ENV)
    return swapped
