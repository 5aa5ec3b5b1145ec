"""The NumPy path's weights handed to decode lanes (``lanes.py``) in other processes: ``pack``
copies every array of a ``Weights`` into one buffer (an array that is a view of another, such as
a tied head's transposed embeddings, stays a view), which goes down the lane's socket once, and
``unpack`` turns it back into the same weights in the lane's own memory.

Each lane holds a private copy rather than reading one shared-memory block: read from a block,
the weights lie in 4 KiB pages (tmpfs takes no transparent huge pages where ``shmem_enabled`` is
``never``, as here), while numpy asks huge pages for its own large arrays, and with every
process reading the weights from one block `bench` at 8 streams served 0.92-0.95x the
in-process path's tokens, against 1.03-1.07x with private copies (benchmarks/README.md, "Decode
lanes"). A pipe also needs no ``/dev/shm`` (64 MiB in a default Docker container).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np

from .weights import Weights


@dataclass(frozen=True)
class ArraySpec:
    """Where an array lies in the buffer: byte offset, shape, strides and dtype."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Packed:
    """The weights in one buffer: ``skeleton`` is the weights with every array replaced by its
    ``ArraySpec`` in ``buffer`` (and no MLX dtype, which does not pickle)."""

    skeleton: Any
    buffer: np.ndarray  # uint8

    @property
    def size(self) -> int:
        return int(self.buffer.size)


def _arrays(value: Any) -> list[np.ndarray]:
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, list):
        return [a for item in value for a in _arrays(item)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [a for f in dataclasses.fields(value) for a in _arrays(getattr(value, f.name))]
    return []


def _address(array: np.ndarray) -> int:
    return int(array.__array_interface__["data"][0])


def _replace(value: Any, convert: Any) -> Any:
    """``value`` with every array ``convert``ed (lists and dataclasses rebuilt)."""
    if isinstance(value, np.ndarray | ArraySpec):
        return convert(value)
    if isinstance(value, list):
        return [_replace(item, convert) for item in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {f.name: _replace(getattr(value, f.name), convert)
                   for f in dataclasses.fields(value)}
        return dataclasses.replace(value, **changes)
    return value


def nbytes(weights: Weights) -> int:
    """Bytes a copy of ``weights`` takes (at most: views are counted too)."""
    return sum(array.nbytes for array in _arrays(weights))


def pack(weights: Weights) -> Packed:
    """A copy of ``weights`` in one buffer."""
    arrays = _arrays(weights)
    # Contiguous arrays are stored; an array lying inside one of them is a view of it.
    stored: list[tuple[int, int, int]] = []  # (address, bytes, offset in the buffer)
    size = 0
    for array in arrays:
        if array.flags.c_contiguous and not any(
                start <= _address(array) < start + n for start, n, _ in stored):
            stored.append((_address(array), array.nbytes, size))
            size += -(-array.nbytes // 64) * 64
    buffer = np.empty(size, np.uint8)
    specs: dict[int, ArraySpec] = {}

    def place(array: np.ndarray) -> ArraySpec:
        if id(array) in specs:
            return specs[id(array)]
        address = _address(array)
        for start, n, offset in stored:
            if start <= address < start + n:
                spec = ArraySpec(offset + address - start, array.shape, array.strides,
                                 array.dtype.str)
                break
        else:  # lies in no stored array (a strided view of something else): not expected
            raise ValueError("an array of the weights is neither contiguous nor a view")
        specs[id(array)] = spec
        return spec

    for array in arrays:  # copy the stored arrays' bytes in
        spec = place(array)
        if array.flags.c_contiguous:
            np.ndarray(array.shape, array.dtype, buffer, spec.offset)[...] = array
    # MLX's dtype does not pickle; the lanes do not convert caches, so they go without it.
    skeleton = dataclasses.replace(_replace(weights, place), **{"dtype": None})
    return Packed(skeleton, buffer)


def unpack(skeleton: Any, buffer: np.ndarray) -> Weights:
    """The weights ``pack`` laid out, as views of ``buffer`` (``dtype`` None: caches are
    converted by the engine)."""
    def view(spec: ArraySpec) -> np.ndarray:
        return np.ndarray(spec.shape, np.dtype(spec.dtype), buffer, spec.offset, spec.strides)

    weights: Weights = _replace(skeleton, view)
    return weights
