"""The keys and values of every sequence in a NumPy batch, in one array per kind, and the
conversion to and from mlx-lm's ``KVCache`` (the prompt cache and the single-sequence lane
hold those).

``(layers, slots, kv_heads, capacity, head_dim)``: a sequence owns a slot, and the occupied
slots are always ``0..count-1`` (a removed sequence's slot takes the last one's), so the
decoding sequences' keys at one layer are a strided view, ``keys[layer, a:b]``, that one
batched product reads without copying. Slots and capacity grow by reallocation. A head's key
features are held in the forward pass's rotation order (``weights.rotation_order``) and put back
in the model's own order for MLX.
"""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import KVCache

# Capacity grows in steps of this many positions (as mlx-lm's KVCache does).
STEP = 256


class KVPool:
    def __init__(self, layers: int, kv_heads: int, head_dim: int,
                 key_order: np.ndarray | None = None) -> None:
        self.layers, self.kv_heads, self.head_dim = layers, kv_heads, head_dim
        self.key_order = key_order
        self.keys = np.zeros((layers, 0, kv_heads, 0, head_dim), np.float32)
        self.values = np.zeros_like(self.keys)
        self.lengths: list[int] = []

    @property
    def count(self) -> int:
        return len(self.lengths)

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.values.nbytes)

    def _resize(self, slots: int, capacity: int) -> None:
        shape = (self.layers, slots, self.kv_heads, capacity, self.head_dim)
        used = max(self.lengths, default=0)
        for name in ("keys", "values"):
            grown = np.zeros(shape, np.float32)
            grown[:, :self.count, :, :used] = getattr(self, name)[:, :self.count, :, :used]
            setattr(self, name, grown)

    def reserve(self, length: int) -> None:
        """Room for ``length`` positions in every slot."""
        if length > self.keys.shape[3]:
            self._resize(self.keys.shape[1], -(-length // STEP) * STEP)

    def add(self, caches: list[Any] | None = None) -> int:
        """A new slot, empty or holding a copy of a per-layer ``KVCache`` list (batch 1)."""
        if self.count == self.keys.shape[1]:
            self._resize(max(4, 2 * self.count), self.keys.shape[3])
        slot = self.count
        self.lengths.append(0)
        if caches:
            self._read(slot, caches)
        return slot

    def clear(self) -> None:
        """Free every slot; the arrays stay, for the next sequences to fill."""
        self.lengths = []

    def emptied(self, keep_bytes: int) -> KVPool:
        """Every slot freed: this pool, its arrays kept for the next sequences, while they take
        at most ``keep_bytes``; else a new empty pool (the memory handed back)."""
        if self.nbytes > keep_bytes:
            return KVPool(self.layers, self.kv_heads, self.head_dim, self.key_order)
        self.clear()
        return self

    def remove(self, slot: int) -> int | None:
        """Free ``slot``; the last slot's sequence moves into it. Returns the moved sequence's
        old slot (its new one is ``slot``), or None when ``slot`` was the last."""
        last = self.count - 1
        if slot == last:
            self.lengths.pop()
            return None
        length = self.lengths[last]
        self.keys[:, slot, :, :length] = self.keys[:, last, :, :length]
        self.values[:, slot, :, :length] = self.values[:, last, :, :length]
        self.lengths[slot] = length
        self.lengths.pop()
        return last

    def put(self, slot: int, keys: np.ndarray, values: np.ndarray) -> None:
        """Fill ``slot`` with ``(layers, kv_heads, length, head_dim)`` keys (pool order) and
        values."""
        length = keys.shape[2]
        if not length:
            self.lengths[slot] = 0
            return
        self.reserve(length)
        self.keys[:, slot, :, :length] = keys
        self.values[:, slot, :, :length] = values
        self.lengths[slot] = length

    def held(self, slot: int, length: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the slot's first ``length`` (all its) keys and values, as ``put`` takes
        them."""
        end = self.lengths[slot] if length is None else min(length, self.lengths[slot])
        return self.keys[:, slot, :, :end].copy(), self.values[:, slot, :, :end].copy()

    def _read(self, slot: int, caches: list[Any]) -> None:
        self.put(slot, *read_caches(caches, self.layers, self.key_order))

    def to_mlx(self, slot: int, dtype: mx.Dtype = mx.float32) -> list[KVCache]:
        """Per-layer ``KVCache`` objects holding a copy of the slot's filled positions."""
        length = self.lengths[slot]
        return to_caches(self.keys[:, slot, :, :length], self.values[:, slot, :, :length],
                         self.key_order, dtype)


def read_caches(caches: list[Any], layers: int, key_order: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray]:
    """A per-layer ``KVCache`` list (batch 1) as ``(layers, kv_heads, length, head_dim)`` keys,
    their features in ``key_order``, and values."""
    if len(caches) != layers:
        raise ValueError(f"{len(caches)} caches for {layers} layers")
    length = int(getattr(caches[0], "offset", 0) or 0)
    keys_out: list[np.ndarray] = []
    values_out: list[np.ndarray] = []
    for cache in caches:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cannot read a {type(cache).__name__}")
        if int(cache.offset) != length:
            raise ValueError("layers hold different lengths")
        if not length:
            continue
        stored: Any = cache.keys, cache.values
        keys = stored[0][0, :, :length].astype(mx.float32)
        values = stored[1][0, :, :length].astype(mx.float32)
        mx.eval(keys, values)
        held = np.asarray(keys)
        keys_out.append(held if key_order is None else held[..., key_order])
        values_out.append(np.asarray(values))
    if not length:
        return np.zeros((layers, 0, 0, 0), np.float32), np.zeros((layers, 0, 0, 0), np.float32)
    return np.stack(keys_out), np.stack(values_out)


def to_caches(keys: np.ndarray, values: np.ndarray, key_order: np.ndarray | None,
              dtype: mx.Dtype = mx.float32) -> list[KVCache]:
    """Per-layer ``KVCache`` objects (batch 1) holding copies of ``(layers, kv_heads, length,
    head_dim)`` keys in ``key_order`` and values, keys put back in the model's order."""
    length = keys.shape[2] if keys.ndim == 4 else 0
    model_order = None if key_order is None else np.argsort(key_order)
    out = []
    for layer in range(len(keys)):
        cache = KVCache()
        if length:
            held = keys[layer, None]
            if model_order is not None:
                held = held[..., model_order]
            cache.state = (mx.array(held).astype(dtype),
                           mx.array(values[layer, None]).astype(dtype), length)
        out.append(cache)
    return out
