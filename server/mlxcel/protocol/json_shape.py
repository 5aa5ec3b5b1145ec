"""Bounds on a JSON request body's shape, checked around parsing.

- ``check_structure`` (before parsing): the values a body can hold, and the objects and arrays
  among them (a twentieth of the values). Parsing cost and memory grow with values, not bytes:
  32 MiB of ``[],`` is ten million lists, and the parser holds the interpreter lock while it
  builds each object or array. The bound is counted on the raw bytes, cheaply first (every
  ``,`` ``[`` ``{``), exactly (outside strings) only when the cheap count is over it. Every
  scan of the raw bytes runs in slices (``SCAN_BYTES``): one C call over a whole body holds the
  interpreter lock for all of it, and the event loop's thread waits that long.
- ``finite_float`` and ``json_int`` (while parsing): ``1e400`` is valid JSON but no double;
  Python reads it as infinity, which no sampler field can take. It is refused here, before
  validation. Numbers go through Python functions, so a body of a million numbers lets other
  threads (the event loop) run while it is parsed.
- ``check_parsed`` (after parsing): nesting depth, so nothing downstream (templates,
  ``copy.deepcopy``, schema compilers) recurses past Python's limit, and lone surrogates
  (``"\\ud800"``), which JSON's escapes allow but no UTF-8 text can hold.
"""

from __future__ import annotations

import math
import re
from typing import Any

from .. import limits
from ..errors import InvalidRequestError, RequestTooLarge

# The rest of a JSON string after its opening quote, up to (not including) its closing one.
_STRING_TAIL = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*')
# An escaped UTF-16 surrogate: the only way a lone one can reach a parsed string.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
# Bytes one scan call looks at: every C call over a body holds the interpreter lock for its
# whole length (a regular expression over 24 MiB of escapes held it a second), so a body is
# scanned in slices, between which the event loop's thread can take the lock.
SCAN_BYTES = 1 << 16


def _too_many(limit: int, what: str) -> RequestTooLarge:
    return RequestTooLarge(
        f"The request body holds more than {limit} {what}; the server's limit is "
        "--max-json-values (objects and arrays: a twentieth of it).")


def check_structure(raw: bytes) -> None:
    """413 when ``raw`` holds more JSON values (or objects and arrays) than the active limits
    allow."""
    limit = limits.active().max_json_values
    container_limit = max(1, limit // 20)
    containers = count_bytes(raw, b"[") + count_bytes(raw, b"{")
    if containers + count_bytes(raw, b",") <= limit and containers <= container_limit:
        return
    # Commas and brackets inside strings are no values: count again, outside strings only.
    values, containers = _count_outside_strings(raw, limit, container_limit)
    if containers > container_limit:
        raise _too_many(container_limit, "JSON objects and arrays")
    if values > limit:
        raise _too_many(limit, "JSON values (array items and object members)")


def count_bytes(raw: bytes, byte: bytes, start: int = 0, end: int | None = None) -> int:
    """``raw.count(byte, start, end)``, one slice of SCAN_BYTES at a time."""
    end = len(raw) if end is None else end
    return sum(raw.count(byte, i, min(end, i + SCAN_BYTES)) for i in range(start, end,
                                                                           SCAN_BYTES))


def _count_outside_strings(raw: bytes, limit: int, container_limit: int) -> tuple[int, int]:
    """(values, objects and arrays) outside the strings of ``raw``, stopping once either is
    over its limit; an unterminated string ends the count (the parser then refuses it)."""
    values = containers = 0
    pos, size = 0, len(raw)
    while pos < size and values <= limit and containers <= container_limit:
        quote = raw.find(b'"', pos)
        end = size if quote < 0 else quote
        found = count_bytes(raw, b"[", pos, end) + count_bytes(raw, b"{", pos, end)
        containers += found
        values += found + count_bytes(raw, b",", pos, end)
        if quote < 0:
            break
        pos = _string_end(raw, quote + 1)
    return values, containers


def _string_end(raw: bytes, pos: int) -> int:
    """Where the JSON string whose text starts at ``pos`` ends (after its closing quote), or
    ``len(raw)`` when it does not; scanned SCAN_BYTES at a time."""
    size = len(raw)
    while True:
        stop = min(size, pos + max(2, SCAN_BYTES))
        match = _STRING_TAIL.match(raw, pos, stop)
        pos = match.end() if match is not None else pos
        if pos < stop and raw[pos] == 0x22:  # the closing quote
            return pos + 1
        if stop >= size:
            return size
        # Stopped at the slice's end, or at a backslash whose escaped byte lies beyond it:
        # the next slice starts there (at least two bytes on, so the scan always advances).


def _has_surrogate_escape(raw: bytes) -> bool:
    size = len(raw)
    # Slices overlap by three bytes, so an escape across two of them is found.
    return any(_SURROGATE_ESCAPE.search(raw, i, min(size, i + SCAN_BYTES + 3)) is not None
               for i in range(0, size, SCAN_BYTES))


def json_int(text: str) -> int:
    """``json.loads``'s ``parse_int`` (a Python call per number: see the module docstring)."""
    return int(text)


def finite_float(text: str) -> float:
    """``json.loads``'s ``parse_float``: a number that overflows a double is a 400."""
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 32 else text[:29] + "..."
        raise InvalidRequestError(
            f"The number {shown} is out of range: JSON numbers must fit a double "
            "(finite, at most about 1.8e308 in magnitude).")
    return value


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_parsed(data: Any, raw: bytes) -> None:
    """400 for nesting deeper than the active limit, or for a lone surrogate in any string."""
    max_depth = limits.active().max_json_depth
    surrogates = _has_surrogate_escape(raw)
    if not surrogates and count_bytes(raw, b"[") + count_bytes(raw, b"{") <= max_depth:
        return
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            if surrogates and isinstance(node, str) and _lone_surrogate(node):
                raise _surrogate_error()
            continue
        if depth > max_depth:
            raise InvalidRequestError(
                f"The request body nests deeper than {max_depth} levels; the server's limit "
                "is --max-json-depth.")
        for key, value in items:
            if surrogates and isinstance(key, str) and _lone_surrogate(key):
                raise _surrogate_error()
            stack.append((value, depth + 1))


def _surrogate_error() -> InvalidRequestError:
    return InvalidRequestError(
        "The request body holds a lone UTF-16 surrogate (an escape such as \\ud800 without "
        "its pair), which is not text: send valid Unicode.")
