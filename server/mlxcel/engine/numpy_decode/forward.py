"""The forward pass of a llama-family model in numpy, over several sequences at once: every
sequence contributes a *piece* (one token when it decodes, a chunk of its prompt when it
prefills), the pieces' rows are stacked so each weight matrix is read once per step, and only
attention runs piece by piece against that sequence's own keys and values.

It computes what mlx-lm's ``llama``/``qwen2``/``qwen3`` modules compute, in float32: RMSNorm,
rotary embeddings (half-split or traditional, angles in float64), grouped-query attention with a
causal mask inside a piece, SwiGLU. Results match MLX's to float32 rounding, not bit for bit
(products run in numpy's BLAS, reductions in numpy's order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kv import SequenceKV
from .weights import Weights

# exp(-g) for g below -EXP_LIMIT would overflow float32; silu(g) is -0.0 there either way.
EXP_LIMIT = 80.0


@dataclass
class Piece:
    """Tokens fed for one sequence at its next positions."""

    kv: SequenceKV
    tokens: list[int]


class RopeTable:
    """Cosine and sine per position and frequency, float32, grown on demand."""

    def __init__(self, weights: Weights) -> None:
        half = weights.head_dim // 2
        self.inv_freq = weights.rope_base ** (
            -2.0 * np.arange(half, dtype=np.float64) / weights.head_dim)
        self.scale = weights.rope_scale
        self.traditional = weights.rope_traditional
        self.cos = np.zeros((0, half), np.float32)
        self.sin = np.zeros((0, half), np.float32)

    def _grow(self, n: int) -> None:
        size = max(n, 2 * len(self.cos), 256)
        angles = np.arange(size, dtype=np.float64)[:, None] * self.scale * self.inv_freq
        self.cos = np.cos(angles).astype(np.float32)
        self.sin = np.sin(angles).astype(np.float32)

    def apply(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Rotate ``(rows, heads, head_dim)`` by each row's position."""
        top = int(positions.max()) + 1 if len(positions) else 0
        if top > len(self.cos):
            self._grow(top)
        cos = self.cos[positions][:, None, :]
        sin = self.sin[positions][:, None, :]
        if self.traditional:
            even, odd = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2] = even * cos - odd * sin
            out[..., 1::2] = odd * cos + even * sin
            return out
        half = x.shape[-1] // 2
        first, second = x[..., :half], x[..., half:]
        return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    mean_square = np.mean(np.square(x), axis=-1, keepdims=True)
    return x * (1.0 / np.sqrt(mean_square + np.float32(eps))) * weight


def softmax(scores: np.ndarray) -> np.ndarray:
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


def attend(q: np.ndarray, kv: SequenceKV, layer: int, end: int, w: Weights) -> np.ndarray:
    """Attention of ``q`` ``(n, heads, head_dim)``, the queries at positions ``end-n..end``,
    over the sequence's first ``end`` positions; returns ``(n, heads * head_dim)``."""
    n, heads, dim = q.shape
    groups = heads // w.n_kv_heads
    keys = kv.keys[layer, :, :end]  # (kv_heads, end, head_dim)
    values = kv.values[layer, :, :end]
    grouped = (q * np.float32(w.scale)).transpose(1, 0, 2).reshape(w.n_kv_heads, groups * n, dim)
    scores = grouped @ keys.transpose(0, 2, 1)  # (kv_heads, groups * n, end)
    if n > 1:
        query_pos = np.arange(end - n, end)[:, None]
        future = np.arange(end)[None, :] > query_pos  # (n, end)
        scores = scores.reshape(w.n_kv_heads, groups, n, end)
        scores[:, :, future] = -np.inf
        scores = scores.reshape(w.n_kv_heads, groups * n, end)
    out = softmax(scores) @ values  # (kv_heads, groups * n, head_dim)
    return out.reshape(heads, n, dim).transpose(1, 0, 2).reshape(n, heads * dim)


def forward(w: Weights, rope: RopeTable, pieces: list[Piece]) -> np.ndarray:
    """Feed every piece (advancing its sequence's length); the logits ``(pieces, vocab)`` at
    each piece's last position."""
    lengths = [len(p.tokens) for p in pieces]
    starts = [p.kv.length for p in pieces]
    for piece, start, n in zip(pieces, starts, lengths, strict=True):
        piece.kv.reserve(start + n)
    tokens = np.fromiter((t for p in pieces for t in p.tokens), np.int64, sum(lengths))
    positions = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths,
                                                                      strict=True)])
    rows = len(tokens)
    heads, kv_heads, dim = w.n_heads, w.n_kv_heads, w.head_dim
    x = w.embed[tokens]
    for index, layer in enumerate(w.layers):
        h = rms_norm(x, layer.input_norm, w.eps)
        q = layer.q(h).reshape(rows, heads, dim)
        k = layer.k(h).reshape(rows, kv_heads, dim)
        v = layer.v(h).reshape(rows, kv_heads, dim)
        if layer.q_norm is not None and layer.k_norm is not None:
            q, k = rms_norm(q, layer.q_norm, w.eps), rms_norm(k, layer.k_norm, w.eps)
        q, k = rope.apply(q, positions), rope.apply(k, positions)
        out = np.empty((rows, heads * dim), np.float32)
        row = 0
        for piece, start, n in zip(pieces, starts, lengths, strict=True):
            piece.kv.write(index, start, k[row:row + n], v[row:row + n])
            out[row:row + n] = attend(q[row:row + n], piece.kv, index, start + n, w)
            row += n
        x = x + layer.o(out)
        h = rms_norm(x, layer.post_norm, w.eps)
        gate = layer.gate(h)
        silu = gate / (1.0 + np.exp(np.minimum(-gate, np.float32(EXP_LIMIT))))
        x = x + layer.down(silu * layer.up(h))
    for piece, start, n in zip(pieces, starts, lengths, strict=True):
        piece.kv.length = start + n
    last = np.cumsum(lengths) - 1
    return rms_norm(x[last], w.norm, w.eps) @ w.lm_head_t
