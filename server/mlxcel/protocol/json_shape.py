"""Bounds on a JSON request body's shape, checked around parsing.

- ``check_structure`` (before parsing): the values a body can hold. Parsing cost and memory
  grow with values, not bytes: 32 MiB of ``[],`` is ten million lists. The bound is counted
  on the raw bytes, cheaply first (every ``,`` ``[`` ``{``), exactly (outside strings) only
  when the cheap count is over it.
- ``finite_float`` (while parsing): ``1e400`` is valid JSON but no double; Python reads it
  as infinity, which no sampler field can take. It is refused here, before validation.
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

# A JSON string (escapes included) or one structural character that starts or separates values.
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[,\[{]')
# An escaped UTF-16 surrogate: the only way a lone one can reach a parsed string.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _too_many(limit: int) -> RequestTooLarge:
    return RequestTooLarge(
        f"The request body holds more than {limit} JSON values (array items and object "
        "members); the server's limit is --max-json-values.")


def check_structure(raw: bytes) -> None:
    """413 when ``raw`` holds more JSON values than the active limit allows."""
    limit = limits.active().max_json_values
    cheap = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if cheap <= limit:
        return
    count = 0
    for match in _TOKENS.finditer(raw):
        if match.end() - match.start() == 1:  # not a string
            count += 1
            if count > limit:
                raise _too_many(limit)


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
