"""The ``call:NAME{key:value,…}`` body shared by Gemma 4 and function-calling Gemma: keys are
bare, strings are wrapped in a format-specific quote token; values coerced to the schema."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Tools, coerced_arguments

_CALL = re.compile(r"\s*call:([A-Za-z0-9_.\-]+)\s*\{(.*)\}\s*$", re.DOTALL)


def _split_top(text: str, quote: str) -> list[str]:
    """Split on commas outside quoted strings and brackets."""
    parts, depth, current, i = [], 0, "", 0
    while i < len(text):
        if text.startswith(quote, i):
            end = text.find(quote, i + len(quote))
            end = len(text) if end < 0 else end + len(quote)
            current += text[i:end]
            i = end
            continue
        ch = text[i]
        depth += ch in "[{"
        depth -= ch in "]}"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
        i += 1
    if current.strip():
        parts.append(current)
    return parts


def parse_loose_call(body: str, quote: str, tools: Tools) -> RawCall:
    match = _CALL.match(body)
    if match is None:
        raise MalformedCall("expected call:NAME{...}")
    name = match.group(1)
    pairs = []
    for part in _split_top(match.group(2), quote):
        key, sep, value = part.partition(":")
        if not sep:
            raise MalformedCall("an argument has no ':'")
        value = value.strip()
        if value.startswith(quote) and value.endswith(quote) and len(value) >= 2 * len(quote):
            value = value[len(quote):-len(quote)]
        pairs.append((key.strip(), value.replace(quote, '"')))
    return RawCall(name, coerced_arguments(pairs, tools, name))
