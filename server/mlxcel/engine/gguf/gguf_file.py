"""Reading a GGUF file: its tensors as MLX arrays under their GGUF names, and its metadata as plain
Python values.

MLX's own reader (``mx.load(path, return_metadata=True)``) does the bulk of the work; llama.cpp's
``gguf.GGUFReader`` (memory-mapped, so cheap) names each tensor's type, and the types MLX does not
keep as they are go through ``requantize.py``. Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import gguf
import mlx.core as mx

from .requantize import (
    FLOAT_TYPES,
    NATIVE_TYPES,
    check_dequantizable,
    describe_conversion,
    requantize,
)
from .unsupported import UnsupportedGGUF

log = logging.getLogger(__name__)

GGUF_MAGIC = b"GGUF"


@dataclass
class GGUFContents:
    """A file's tensors (GGUF names; quantized ones as ``.weight``/``.scales``/``.biases``) and
    metadata; ``converted`` names the tensors re-quantized from types MLX does not keep."""

    path: str
    tensors: dict[str, mx.array]
    metadata: dict[str, Any]
    converted: dict[str, gguf.GGMLQuantizationType] = field(default_factory=dict)


def is_gguf_path(path: str) -> bool:
    """Whether ``--model`` names a GGUF file (by its suffix, as llama-server's users name them)."""
    return path.lower().endswith(".gguf")


def open_reader(path: str) -> gguf.GGUFReader:
    """llama.cpp's reader over the file, or ``UnsupportedGGUF`` for a file that is none."""
    file = Path(path)
    if not file.is_file():
        raise UnsupportedGGUF(path, "no such file")
    stat = file.stat()
    return _reader(str(file.resolve()), stat.st_mtime_ns, stat.st_size)


# The reader parses every metadata string into numpy views (~10 s for a 49k-token vocabulary on a
# busy 2-core machine): startup's check and the load that follows share one parse.
@functools.lru_cache(maxsize=1)
def _reader(path: str, _mtime_ns: int, _size: int) -> gguf.GGUFReader:
    with open(path, "rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise UnsupportedGGUF(path, "not a GGUF file (it does not start with 'GGUF')")
    try:
        return gguf.GGUFReader(path)
    except (ValueError, IndexError, KeyError, OSError) as exc:  # a short or damaged file
        raise UnsupportedGGUF(path, f"unreadable GGUF file (truncated or damaged: {exc})") from None


def check_tensor_types(path: str, reader: gguf.GGUFReader) -> None:
    for tensor in reader.tensors:
        check_dequantizable(path, tensor.name, tensor)


def plain(value: Any) -> Any:
    """A metadata value as Python: MLX returns numbers and numeric arrays as ``mx.array``."""
    if isinstance(value, mx.array):
        return value.item() if value.ndim == 0 else value.tolist()
    return value


def _mlx_read(path: str) -> GGUFContents:
    """The whole file through MLX's reader: exact for the types it keeps."""
    try:
        loaded = mx.load(path, return_metadata=True)
    except (RuntimeError, ValueError) as exc:
        raise UnsupportedGGUF(path, f"MLX cannot read this GGUF file: {exc}") from None
    tensors, metadata = cast(tuple[dict[str, mx.array], dict[str, Any]], loaded)
    return GGUFContents(path, dict(tensors), {key: plain(v) for key, v in metadata.items()})


def _reader_read(path: str, reader: gguf.GGUFReader) -> GGUFContents:
    """The whole file through llama.cpp's reader, one tensor at a time (MLX's reader would expand
    every type it does not keep to float16 at once, and some it cannot read at all)."""
    metadata = {name: field.contents() for name, field in reader.fields.items()}
    contents = GGUFContents(path, {}, metadata)
    for tensor in reader.tensors:
        contents.tensors.update(requantize(path, tensor.name, tensor))
        if tensor.tensor_type not in FLOAT_TYPES:
            contents.converted[tensor.name] = tensor.tensor_type
    return contents


def read_gguf(path: str) -> GGUFContents:
    """Every tensor and metadata value of ``path``, or ``UnsupportedGGUF``."""
    reader = open_reader(path)
    check_tensor_types(path, reader)
    if all(tensor.tensor_type in NATIVE_TYPES for tensor in reader.tensors):
        return _mlx_read(path)
    contents = _reader_read(path, reader)
    log.info("GGUF %s: converted %s to MLX affine quantization (group 32)",
             Path(path).name, describe_conversion(contents.converted))
    return contents
