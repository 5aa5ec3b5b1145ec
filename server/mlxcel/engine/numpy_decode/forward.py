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

from .kv import KVPool
from .weights import Weights

# exp(-g) for g below -EXP_LIMIT would overflow float32; silu(g) is -0.0 there either way.
EXP_LIMIT = 80.0


@dataclass
class Piece:
    """Tokens fed for the sequence in ``slot`` at its next positions."""

    slot: int
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

    def at(self, positions: np.ndarray) -> Rotation:
        """The rotation of rows at ``positions``, to apply to any number of heads."""
        top = int(positions.max()) + 1 if len(positions) else 0
        if top > len(self.cos):
            self._grow(top)
        return Rotation(self.cos[positions], self.sin[positions], self.traditional)


class Rotation:
    """Rotary embedding for a fixed set of rows. Half-split layout: ``x * [cos, cos] +
    [x2, x1] * [-sin, sin]``, which is ``[x1 cos - x2 sin, x2 cos + x1 sin]`` exactly."""

    def __init__(self, cos: np.ndarray, sin: np.ndarray, traditional: bool) -> None:
        self.traditional = traditional
        if traditional:
            self.cos, self.sin = cos[:, None, :], sin[:, None, :]
        else:
            self.cos = np.concatenate([cos, cos], axis=-1)[:, None, :]
            self.sin = np.concatenate([-sin, sin], axis=-1)[:, None, :]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Rotate ``(rows, heads, head_dim)``."""
        if self.traditional:
            even, odd = x[..., 0::2], x[..., 1::2]
            out = np.empty_like(x)
            out[..., 0::2] = even * self.cos - odd * self.sin
            out[..., 1::2] = odd * self.cos + even * self.sin
            return out
        half = x.shape[-1] // 2
        swapped = np.concatenate([x[..., half:], x[..., :half]], axis=-1)
        out = x * self.cos
        out += swapped * self.sin
        return out


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    # np.mean's Python wrapper costs more than the arithmetic at these sizes; this is its sum
    # divided by the count, in the same order.
    mean_square = np.square(x).sum(axis=-1, keepdims=True)
    mean_square /= x.shape[-1]
    mean_square += np.float32(eps)
    np.sqrt(mean_square, out=mean_square)
    return x / mean_square * weight


def softmax(scores: np.ndarray) -> np.ndarray:
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    scores /= scores.sum(axis=-1, keepdims=True)
    return scores


def attend(q: np.ndarray, pool: KVPool, layer: int, slot: int, end: int, w: Weights
           ) -> np.ndarray:
    """Attention of ``q`` ``(n, heads, head_dim)``, the queries at positions ``end-n..end``,
    over the slot's first ``end`` positions; returns ``(n, heads * head_dim)``."""
    n, heads, dim = q.shape
    groups = heads // w.n_kv_heads
    keys = pool.keys[layer, slot, :, :end]  # (kv_heads, end, head_dim)
    values = pool.values[layer, slot, :, :end]
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


def attend_singles(q: np.ndarray, pool: KVPool, layer: int, slots: np.ndarray,
                   ends: np.ndarray, w: Weights) -> np.ndarray:
    """Attention of one query per sequence, ``q`` ``(b, heads, head_dim)``, over each slot's
    first ``ends[i]`` positions, as one batched product over the slots' range (a slot in the
    range with no query gets a zero one, and its row is dropped)."""
    first, last = int(slots.min()), int(slots.max()) + 1
    span, width = last - first, int(ends.max())
    heads, dim = q.shape[1], q.shape[2]
    kv_heads, groups = w.n_kv_heads, heads // w.n_kv_heads
    grouped = np.zeros((span, kv_heads, groups, dim), np.float32)
    grouped[slots - first] = (q * np.float32(w.scale)).reshape(-1, kv_heads, groups, dim)
    keys = pool.keys[layer, first:last, :, :width]  # (span, kv_heads, width, head_dim)
    scores = grouped @ keys.transpose(0, 1, 3, 2)  # (span, kv_heads, groups, width)
    limit = np.full(span, width)
    limit[slots - first] = ends
    masked = np.arange(width)[None, :] >= limit[:, None]
    if masked.any():
        scores += np.where(masked, np.float32(-np.inf), np.float32(0))[:, None, None, :]
    out = softmax(scores) @ pool.values[layer, first:last, :, :width]
    return out[slots - first].reshape(len(slots), heads * dim)


def forward(w: Weights, rope: RopeTable, pool: KVPool, pieces: list[Piece]) -> np.ndarray:
    """Feed every piece (advancing its slot's length); the logits ``(pieces, vocab)`` at each
    piece's last position."""
    lengths = [len(p.tokens) for p in pieces]
    starts = [pool.lengths[p.slot] for p in pieces]
    pool.reserve(max(s + n for s, n in zip(starts, lengths, strict=True)))
    tokens = np.array([t for p in pieces for t in p.tokens], np.int64)
    positions = np.array([s + i for s, n in zip(starts, lengths, strict=True)
                          for i in range(n)], np.int64)
    offsets = np.cumsum([0, *lengths])
    # Single-token pieces share one batched attention, unless there is only one of them.
    singles = [i for i, n in enumerate(lengths) if n == 1]
    if len(singles) < 2:
        singles = []
    single_rows = offsets[singles]
    single_slots = np.array([pieces[i].slot for i in singles], np.int64)
    single_pos = positions[single_rows]
    multi = [i for i, n in enumerate(lengths) if n > 1 or len(singles) == 0]
    rows = len(tokens)
    heads, kv_heads, dim = w.n_heads, w.n_kv_heads, w.head_dim
    mm = w.matmul
    x = w.embed[tokens]  # a copy: updated in place below
    rotate = rope.at(positions)
    for index, layer in enumerate(w.layers):
        h = rms_norm(x, layer.input_norm, w.eps)
        qk = np.concatenate([layer.q(h, mm), layer.k(h, mm)], axis=-1).reshape(rows, -1, dim)
        v = layer.v(h, mm).reshape(rows, kv_heads, dim)
        if layer.qk_norm is not None:
            qk = rms_norm(qk, layer.qk_norm, w.eps)
        qk = rotate(qk)  # queries and keys together: one norm, one rotation
        q, k = qk[:, :heads], qk[:, heads:]
        out = np.empty((rows, heads * dim), np.float32)
        if singles:
            pool.keys[index, single_slots, :, single_pos] = k[single_rows]
            pool.values[index, single_slots, :, single_pos] = v[single_rows]
            out[single_rows] = attend_singles(q[single_rows], pool, index, single_slots,
                                              single_pos + 1, w)
        for i in multi:
            start, n, slot, row = starts[i], lengths[i], pieces[i].slot, offsets[i]
            pool.keys[index, slot, :, start:start + n] = k[row:row + n].transpose(1, 0, 2)
            pool.values[index, slot, :, start:start + n] = v[row:row + n].transpose(1, 0, 2)
            out[row:row + n] = attend(q[row:row + n], pool, index, slot, start + n, w)
        x += layer.o(out, mm)
        h = rms_norm(x, layer.post_norm, w.eps)
        gate = layer.gate(h, mm)
        silu = gate / (1.0 + np.exp(np.minimum(-gate, np.float32(EXP_LIMIT))))
        x += layer.down(silu * layer.up(h, mm), mm)
    for piece, start, n in zip(pieces, starts, lengths, strict=True):
        pool.lengths[piece.slot] = start + n
    return mm(rms_norm(x[offsets[1:] - 1], w.norm, w.eps), w.lm_head_t)
