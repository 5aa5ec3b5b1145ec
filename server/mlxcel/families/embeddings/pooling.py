"""Pooling token states into one vector, and llama-server's ``embd_normalize`` modes."""

from __future__ import annotations

from typing import Literal

import numpy as np

Pooling = Literal["none", "mean", "cls", "last"]
POOLINGS: tuple[str, ...] = ("none", "mean", "cls", "last")


def pool(states: np.ndarray, pooling: Pooling) -> np.ndarray:
    """``states`` is (tokens, hidden) for one input; ``none`` keeps every token's vector."""
    if pooling == "mean":
        return states.mean(axis=0)
    if pooling == "cls":
        return states[0]
    if pooling == "last":
        return states[-1]
    return states


def normalize(vector: np.ndarray, mode: int) -> np.ndarray:
    """``-1`` none, ``0`` max-absolute (scaled to the int16 range), ``1`` taxicab,
    ``2`` Euclidean (the default), ``p > 2`` p-norm; a zero vector stays zero."""
    if mode < 0:
        return vector
    if mode == 0:
        norm = float(np.abs(vector).max()) / 32760.0
    elif mode == 2:
        norm = float(np.sqrt((vector.astype(np.float64) ** 2).sum()))
    else:
        norm = float((np.abs(vector.astype(np.float64)) ** mode).sum() ** (1.0 / mode))
    return vector / norm if norm > 0 else vector
