"""One sequence's keys and values for the NumPy forward pass, and the conversion to and from
mlx-lm's ``KVCache`` (the prompt cache and the single-sequence lane hold those)."""

from __future__ import annotations

from typing import Any

import mlx.core as mx
import numpy as np
from mlx_lm.models.cache import KVCache

# Capacity grows in steps of this many positions (as mlx-lm's KVCache does).
STEP = 256


class SequenceKV:
    """Keys and values of every layer, ``(layers, kv_heads, capacity, head_dim)`` each; the
    first ``length`` positions are filled."""

    def __init__(self, layers: int, kv_heads: int, head_dim: int) -> None:
        self.shape = (layers, kv_heads, 0, head_dim)
        self.keys = np.zeros(self.shape, np.float32)
        self.values = np.zeros(self.shape, np.float32)
        self.length = 0

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.values.nbytes)

    def reserve(self, length: int) -> None:
        """Room for ``length`` positions (existing ones kept)."""
        capacity = self.keys.shape[2]
        if length <= capacity:
            return
        new = -(-length // STEP) * STEP
        layers, heads, _, dim = self.shape
        for name in ("keys", "values"):
            grown = np.zeros((layers, heads, new, dim), np.float32)
            grown[:, :, :self.length] = getattr(self, name)[:, :, :self.length]
            setattr(self, name, grown)

    def write(self, layer: int, start: int, keys: np.ndarray, values: np.ndarray) -> None:
        """Store ``(n, kv_heads, head_dim)`` keys and values at positions ``start..start+n``
        (``reserve`` first)."""
        n = keys.shape[0]
        self.keys[layer, :, start:start + n] = keys.transpose(1, 0, 2)
        self.values[layer, :, start:start + n] = values.transpose(1, 0, 2)

    def trim(self, length: int) -> None:
        self.length = min(self.length, length)

    # -- mlx-lm's caches ---------------------------------------------------------------------
    @classmethod
    def from_mlx(cls, caches: list[Any], layers: int, kv_heads: int, head_dim: int
                 ) -> SequenceKV:
        """A copy of what a list of per-layer ``KVCache`` holds (batch 1)."""
        kv = cls(layers, kv_heads, head_dim)
        if len(caches) != layers:
            raise ValueError(f"{len(caches)} caches for {layers} layers")
        length = int(getattr(caches[0], "offset", 0) or 0)
        kv.reserve(length)
        for index, cache in enumerate(caches):
            if not isinstance(cache, KVCache):
                raise TypeError(f"cannot read a {type(cache).__name__}")
            if int(cache.offset) != length:
                raise ValueError("layers hold different lengths")
            if length:
                stored: Any = cache.keys, cache.values
                keys = stored[0][0, :, :length].astype(mx.float32)
                values = stored[1][0, :, :length].astype(mx.float32)
                mx.eval(keys, values)
                kv.keys[index, :, :length] = np.asarray(keys)
                kv.values[index, :, :length] = np.asarray(values)
        kv.length = length
        return kv

    def to_mlx(self, dtype: mx.Dtype = mx.float32) -> list[KVCache]:
        """Per-layer ``KVCache`` objects holding a copy of the filled positions."""
        out = []
        for index in range(self.shape[0]):
            cache = KVCache()
            if self.length:
                keys = mx.array(self.keys[index, None, :, :self.length]).astype(dtype)
                values = mx.array(self.values[index, None, :, :self.length]).astype(dtype)
                cache.state = (keys, values, self.length)
            out.append(cache)
        return out
