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

import math
from dataclasses import dataclass
from itertools import accumulate

import numpy as np

from .kv import KVPool
from .weights import Weights


@dataclass
class Piece:
    """Tokens fed for the sequence in ``slot`` at its next positions."""

    slot: int
    tokens: list[int]


class RopeTable:
    """The rotary embedding's turn per position and frequency, ``cos + i sin`` in complex64,
    grown on demand."""

    def __init__(self, weights: Weights) -> None:
        half = weights.head_dim // 2
        self.inv_freq = weights.rope_base ** (
            -2.0 * np.arange(half, dtype=np.float64) / weights.head_dim)
        self.scale = weights.rope_scale
        self.turns = np.zeros((0, half), np.complex64)

    def _grow(self, n: int) -> None:
        size = max(n, 2 * len(self.turns), 256)
        angles = np.arange(size, dtype=np.float64)[:, None] * self.scale * self.inv_freq
        self.turns = (np.cos(angles).astype(np.float32)
                      + 1j * np.sin(angles).astype(np.float32)).astype(np.complex64)

    def turn(self, position: int) -> np.ndarray:
        """The turns ``(head_dim // 2,)`` of one position."""
        if position >= len(self.turns):
            self._grow(position + 1)
        return self.turns[position]

    def at(self, positions: np.ndarray) -> Rotation:
        """The rotation of rows at ``positions``, to apply to any number of heads."""
        top = int(positions.max()) + 1 if len(positions) else 0
        if top > len(self.turns):
            self._grow(top)
        return Rotation(self.turns[positions][:, None, :])


class Rotation:
    """Rotary embedding for a fixed set of rows, over features in rotation order (each turned
    pair side by side, ``weights.rotation_order``): the pair ``(a, b)`` read as ``a + ib`` times
    ``cos + i sin`` is ``(a cos - b sin, b cos + a sin)``, the rotation, in one product."""

    def __init__(self, turns: np.ndarray) -> None:
        self.turns = turns

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Rotate ``(rows, heads, head_dim)``, or one row's ``(heads, head_dim)`` (the last axis
        contiguous)."""
        turned: np.ndarray = (x.view(np.complex64) * self.turns).view(np.float32)
        return turned


def normalize(x: np.ndarray, eps: np.float32) -> np.ndarray:
    """RMSNorm without its weight, over the last axis of width ``n``:
    ``x / sqrt(sum(x**2) + n * eps)``, given ``eps`` = ``n * eps``; the weight times ``sqrt(n)``
    is folded into whatever reads the result (``weights.py``)."""
    total = np.vecdot(x, x)[..., None]
    total += eps
    np.sqrt(total, out=total)
    return np.divide(x, total)


def attend(q: np.ndarray, pool: KVPool, layer: int, slot: int, end: int, w: Weights
           ) -> np.ndarray:
    """Attention of ``q`` ``(n, heads, head_dim)`` (scaled already), the queries at positions
    ``end-n..end``, over the slot's first ``end`` positions; returns ``(n, heads * head_dim)``."""
    n, heads, dim = q.shape
    kv_heads = w.n_kv_heads
    grouped = q.transpose(1, 0, 2).reshape(kv_heads, heads // kv_heads * n, dim)
    # (kv_heads, groups * n, end)
    scores = np.matmul(grouped, pool.keys[layer, slot, :, :end].transpose(0, 2, 1))
    if n > 1:
        query_pos = np.arange(end - n, end)[:, None]
        future = np.arange(end)[None, :] > query_pos  # (n, end)
        scores = scores.reshape(kv_heads, heads // kv_heads, n, end)
        scores[:, :, future] = -np.inf
        scores = scores.reshape(kv_heads, heads // kv_heads * n, end)
    out = _softmax_times(scores, pool.values[layer, slot, :, :end])
    return out.reshape(heads, n, dim).transpose(1, 0, 2).reshape(n, heads * dim)


def _softmax_times(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``softmax(scores) @ values``, normalized after the product (fewer elements)."""
    scores = np.subtract(scores, np.maximum.reduce(scores, axis=-1, keepdims=True))
    np.exp(scores, out=scores)
    out = np.matmul(scores, values)
    out /= np.add.reduce(scores, axis=-1, keepdims=True)
    return out


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
    grouped[slots - first] = q.reshape(-1, kv_heads, groups, dim)
    keys = pool.keys[layer, first:last, :, :width]  # (span, kv_heads, width, head_dim)
    scores = grouped @ keys.transpose(0, 1, 3, 2)  # (span, kv_heads, groups, width)
    limit = np.full(span, width)
    limit[slots - first] = ends
    masked = np.arange(width)[None, :] >= limit[:, None]
    if masked.any():
        scores += np.where(masked, np.float32(-np.inf), np.float32(0))[:, None, None, :]
    out = _softmax_times(scores, pool.values[layer, first:last, :, :width])
    return out[slots - first].reshape(len(slots), heads * dim)


def _swiglu(gate_up: np.ndarray) -> np.ndarray:
    """SwiGLU of the gate/up product's halves, over its last axis: silu(g) * u =
    (g/2) * (1 + tanh(g/2)) * u, where the weights give g/2 (weights.py)."""
    width = gate_up.shape[-1] // 2
    half_gate, up = gate_up[..., :width], gate_up[..., width:]
    act = np.tanh(half_gate)
    act += 1
    act *= half_gate
    act *= up
    return act


def normalize_row(x: np.ndarray, eps: np.float32) -> np.ndarray:
    """``normalize`` of one row, its sum of squares taken as a Python float (two numpy calls
    instead of four: a single stream's step is mostly the cost of each call)."""
    return x * np.float32(1.0 / math.sqrt(float(np.vdot(x, x)) + eps))


def decode_one(w: Weights, rope: RopeTable, pool: KVPool, slot: int, token: int
               ) -> np.ndarray:
    """``forward`` for one sequence feeding one token (a single stream's decode step): the same
    arithmetic on one row held as a vector (each product a matrix-vector one), without the
    batch's bookkeeping; the logits ``(1, vocab)``."""
    start = pool.lengths[slot]
    end = start + 1
    pool.reserve(end)
    rotate = Rotation(rope.turn(start))
    heads, kv_heads, dim = w.n_heads, w.n_kv_heads, w.head_dim
    qk_width = (heads + kv_heads) * dim
    hidden_eps, head_eps = np.float32(w.eps * w.hidden), np.float32(w.eps * dim)
    mm = w.matmul
    keys, values = pool.keys, pool.values
    x = w.embed[token].copy()  # updated in place below
    for index, layer in enumerate(w.layers):
        qkv = layer.qkv(normalize_row(x, hidden_eps), mm)
        qk = qkv[:qk_width].reshape(heads + kv_heads, dim)
        if layer.qk_norm is not None:
            qk = normalize(qk, head_eps)
            qk *= layer.qk_norm
        qk = rotate(qk)
        keys[index, slot, :, start] = qk[heads:]
        values[index, slot, :, start] = qkv[qk_width:].reshape(kv_heads, dim)
        grouped = qk[:heads].reshape(kv_heads, heads // kv_heads, dim)
        scores = np.matmul(grouped, keys[index, slot, :, :end].transpose(0, 2, 1))
        out = _softmax_times(scores, values[index, slot, :, :end])
        x += layer.o(out.reshape(heads * dim), mm)
        x += layer.down(_swiglu(layer.gate_up(normalize_row(x, hidden_eps), mm)), mm)
    pool.lengths[slot] = end
    logits: np.ndarray = mm(normalize_row(x, hidden_eps) * w.norm, w.lm_head_t)
    return logits[None]


def decode_few(w: Weights, rope: RopeTable, pool: KVPool, slots: list[int], tokens: list[int]
               ) -> np.ndarray:
    """``forward`` for a few sequences each feeding one token: the rows stacked for the
    products, attention row by row on each slot's own keys as ``decode_one`` does it, without
    the batched attention's gathers and masks (which cost more than they save for a few rows);
    the logits ``(rows, vocab)``."""
    starts = [pool.lengths[slot] for slot in slots]
    pool.reserve(max(starts) + 1)
    rows = len(slots)
    rotate = rope.at(np.array(starts, np.int64))
    heads, kv_heads, dim = w.n_heads, w.n_kv_heads, w.head_dim
    groups, qk_width = heads // kv_heads, (heads + kv_heads) * dim
    hidden_eps, head_eps = np.float32(w.eps * w.hidden), np.float32(w.eps * dim)
    mm = w.matmul
    keys, values = pool.keys, pool.values
    x = w.embed[tokens]  # a copy: updated in place below
    out = np.empty((rows, heads * dim), np.float32)
    for index, layer in enumerate(w.layers):
        qkv = layer.qkv(normalize(x, hidden_eps), mm)
        qk = qkv[:, :qk_width].reshape(rows, heads + kv_heads, dim)
        if layer.qk_norm is not None:
            qk = normalize(qk, head_eps)
            qk *= layer.qk_norm
        qk = rotate(qk)
        v = qkv[:, qk_width:].reshape(rows, kv_heads, dim)
        layer_keys, layer_values = keys[index], values[index]
        for row, (slot, start) in enumerate(zip(slots, starts, strict=True)):
            layer_keys[slot, :, start] = qk[row, heads:]
            layer_values[slot, :, start] = v[row]
            scores = np.matmul(qk[row, :heads].reshape(kv_heads, groups, dim),
                               layer_keys[slot, :, :start + 1].transpose(0, 2, 1))
            out[row] = _softmax_times(scores, layer_values[slot, :, :start + 1]).reshape(-1)
        x += layer.o(out, mm)
        x += layer.down(_swiglu(layer.gate_up(normalize(x, hidden_eps), mm)), mm)
    for slot, start in zip(slots, starts, strict=True):
        pool.lengths[slot] = start + 1
    return mm(normalize(x, hidden_eps) * w.norm, w.lm_head_t)


def forward(w: Weights, rope: RopeTable, pool: KVPool, pieces: list[Piece]) -> np.ndarray:
    """Feed every piece (advancing its slot's length); the logits ``(pieces, vocab)`` at each
    piece's last position."""
    lengths = [len(p.tokens) for p in pieces]
    starts = [pool.lengths[p.slot] for p in pieces]
    pool.reserve(max(s + n for s, n in zip(starts, lengths, strict=True)))
    if max(lengths) == 1:  # decoding only: one row per piece
        tokens = np.array([p.tokens[0] for p in pieces], np.int64)
        positions = np.array(starts, np.int64)
        offsets = list(range(len(pieces) + 1))
    else:
        tokens = np.array([t for p in pieces for t in p.tokens], np.int64)
        positions = np.concatenate([np.arange(s, s + n) for s, n in
                                    zip(starts, lengths, strict=True)])
        offsets = [0, *accumulate(lengths)]
    # Single-token pieces share one batched attention, unless there is only one of them.
    singles = [i for i, n in enumerate(lengths) if n == 1]
    if len(singles) < 2:
        singles = []
    single_rows = np.array([offsets[i] for i in singles], np.int64)
    single_slots = np.array([pieces[i].slot for i in singles], np.int64)
    single_pos = positions[single_rows]
    multi = [i for i, n in enumerate(lengths) if n > 1 or not singles]
    rows = len(tokens)
    heads, kv_heads, dim = w.n_heads, w.n_kv_heads, w.head_dim
    qk_width = (heads + kv_heads) * dim
    hidden_eps, head_eps = np.float32(w.eps * w.hidden), np.float32(w.eps * dim)
    mm = w.matmul
    x = w.embed[tokens]  # a copy: updated in place below
    rotate = rope.at(positions)
    for index, layer in enumerate(w.layers):
        qkv = layer.qkv(normalize(x, hidden_eps), mm)
        qk = qkv[:, :qk_width].reshape(rows, heads + kv_heads, dim)
        v = qkv[:, qk_width:].reshape(rows, kv_heads, dim)
        if layer.qk_norm is not None:
            qk = normalize(qk, head_eps)
            qk *= layer.qk_norm
        qk = rotate(qk)  # queries and keys together: one norm, one rotation
        q, k = qk[:, :heads], qk[:, heads:]
        if singles:
            pool.keys[index, single_slots, :, single_pos] = k[single_rows]
            pool.values[index, single_slots, :, single_pos] = v[single_rows]
            attended = attend_singles(q[single_rows], pool, index, single_slots,
                                      single_pos + 1, w)
        if not multi:  # decoding only: the single rows are every row, in order
            out = attended
        else:
            out = np.empty((rows, heads * dim), np.float32)
            if singles:
                out[single_rows] = attended
        for i in multi:
            start, n, slot, row = starts[i], lengths[i], pieces[i].slot, offsets[i]
            pool.keys[index, slot, :, start:start + n] = k[row:row + n].transpose(1, 0, 2)
            pool.values[index, slot, :, start:start + n] = v[row:row + n].transpose(1, 0, 2)
            out[row:row + n] = attend(q[row:row + n], pool, index, slot, start + n, w)
        x += layer.o(out, mm)
        x += layer.down(_swiglu(layer.gate_up(normalize(x, hidden_eps), mm)), mm)
    for piece, start, n in zip(pieces, starts, lengths, strict=True):
        pool.lengths[piece.slot] = start + n
    last = x if len(offsets) == rows + 1 else x[[o - 1 for o in offsets[1:]]]
    return mm(normalize(last, hidden_eps) * w.norm, w.lm_head_t)
