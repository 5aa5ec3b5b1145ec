"""The NumPy path's weights handed to decode lanes (``lanes.py``) in other processes through
one shared-memory block: ``share`` copies every array of a ``Weights`` into a new block once (an
array that is a view of another, such as a tied head's transposed embeddings, stays a view) and
returns a ``Layout`` that a lane turns back into the same weights with ``attach``.

``attach`` copies the block into the lane's own memory and lets it go. Read from the block, the
weights lie in 4 KiB pages (tmpfs takes no transparent huge pages where ``shmem_enabled`` is
``never``, as here), while numpy asks huge pages for its own large arrays: with every process
reading the weights from the block, `bench` at 8 streams served 0.92-0.95x the in-process
path's tokens, and 1.03-1.07x with private copies (benchmarks/README.md, "Decode lanes"). So
each lane holds a private copy, and the block lives only while lanes start.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from multiprocessing import resource_tracker, shared_memory
from typing import Any

import numpy as np

from .weights import Weights


@dataclass(frozen=True)
class ArraySpec:
    """Where an array lies in the block: byte offset, shape, strides and dtype."""

    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Layout:
    """What another process needs to rebuild the weights: the block's name, and the weights
    with every array replaced by its ``ArraySpec`` (and no MLX dtype, which does not pickle)."""

    name: str
    skeleton: Any
    size: int  # bytes of the block in use


class SharedBlock:
    """The shared-memory block; ``close`` unmaps and removes it."""

    def __init__(self, memory: shared_memory.SharedMemory) -> None:
        self.memory = memory

    def close(self) -> None:
        self.memory.close()
        try:
            self.memory.unlink()
        except FileNotFoundError:
            pass


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


def share(weights: Weights) -> tuple[Layout, SharedBlock]:
    """A new shared block holding a copy of ``weights``, and its layout."""
    arrays = _arrays(weights)
    # Contiguous arrays are stored; an array lying inside one of them is a view of it.
    stored: list[tuple[int, int, int]] = []  # (address, bytes, offset in the block)
    size = 0
    for array in arrays:
        if array.flags.c_contiguous and not any(
                start <= _address(array) < start + n for start, n, _ in stored):
            stored.append((_address(array), array.nbytes, size))
            size += -(-array.nbytes // 64) * 64
    memory = shared_memory.SharedMemory(create=True, size=max(size, 1))
    block = SharedBlock(memory)
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
            target: np.ndarray = np.ndarray(array.shape, array.dtype, memory.buf, spec.offset)
            if _address(target) != _address(array):
                target[...] = array
    # MLX's dtype does not pickle; the lanes do not convert caches, so they go without it.
    skeleton = dataclasses.replace(_replace(weights, place), **{"dtype": None})
    return Layout(memory.name, skeleton, size), block


def _rebuild(layout: Layout, buffer: Any) -> Weights:
    def view(spec: ArraySpec) -> np.ndarray:
        return np.ndarray(spec.shape, np.dtype(spec.dtype), buffer, spec.offset, spec.strides)

    rebuilt: Weights = _replace(layout.skeleton, view)
    return rebuilt


def attach(layout: Layout) -> Weights:
    """The weights ``share`` laid out, copied from its block into this process's memory
    (``dtype`` None: caches are converted by the block's owner)."""
    try:  # Python 3.13+: only the creator's resource tracker may remove the block
        memory = shared_memory.SharedMemory(name=layout.name, create=False,
                                            track=False)  # type: ignore[call-arg]
    except TypeError:  # before 3.13 this process's tracker would remove it at exit: untrack
        memory = shared_memory.SharedMemory(name=layout.name, create=False)
        resource_tracker.unregister(getattr(memory, "_name", "/" + memory.name),
                                    "shared_memory")
    private = np.empty(layout.size, np.uint8)  # numpy's large arrays get huge pages
    assert memory.buf is not None
    private[:] = np.frombuffer(memory.buf, np.uint8, layout.size)
    memory.close()
    return _rebuild(layout, private)
