"""Bounds on a JSON request body's shape, checked around parsing.

- ``check_structure`` (before parsing): the values a body can hold, and the objects and arrays
  among them (a twentieth of the values). Parsing cost and memory grow with values, not bytes:
  32 MiB of ``[],`` is ten million lists, and the parser holds the interpreter lock while it
  builds each object or array. The bound is counted on the raw bytes, cheaply first (every
  ``,`` ``[`` ``{``), exactly (outside strings) only when the cheap count is over it.
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

# A JSON string, escapes included.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
# An escaped UTF-16 surrogate: the only way a lone one can reach a parsed string.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _too_many(limit: int, what: str) -> RequestTooLarge:
    return RequestTooLarge(
        f"The request body holds more than {limit} {what}; the server's limit is "
        "--max-json-values (objects and arrays: a twentieth of it).")


def check_structure(raw: bytes) -> None:
    """413 when ``raw`` holds more JSON values (or objects and arrays) than the active limits
    allow."""
    limit = limits.active().max_json_values
    container_limit = max(1, limit // 20)
    containers = raw.count(b"[") + raw.count(b"{")
    if containers + raw.count(b",") <= limit and containers <= container_limit:
        return
    outside = _STRING.sub(b"", raw)  # commas and brackets inside strings are no values
    containers = outside.count(b"[") + outside.count(b"{")
    if containers > container_limit:
        raise _too_many(container_limit, "JSON objects and arrays")
    if containers + outside.count(b",") > limit:
        raise _too_many(limit, "JSON values (array items and object members)")


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
    surrogates = _SURROGATE_ESCAPE.search(raw) is not None
    if not surrogates and raw.count(b"[") + raw.count(b"{") <= max_depth:
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
