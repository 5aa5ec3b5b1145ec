"""Helpers for the formats whose arguments are tagged text rather than JSON: tag scanning
and the schema coercion of each value."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Tools, coerced_arguments


def tagged_pairs(body: str, key_open: str, key_close: str, value_open: str,
                 value_close: str) -> list[tuple[str, str]]:
    """``key_open K key_close value_open V value_close`` pairs, in order."""
    pattern = re.compile(
        re.escape(key_open) + r"(.*?)" + re.escape(key_close) + r"\s*"
        + re.escape(value_open) + r"(.*?)" + re.escape(value_close), re.DOTALL)
    return [(k.strip(), v) for k, v in pattern.findall(body)]


def strip_newline_edges(value: str) -> str:
    """Values sit on their own lines in the XML formats: drop one newline at each edge."""
    if value.startswith("\n"):
        value = value[1:]
    if value.endswith("\n"):
        value = value[:-1]
    return value


def name_then_pairs(body: str, first_key_tag: str, pairs: list[tuple[str, str]],
                    tools: Tools) -> RawCall:
    """Formats written ``NAME<key>…</key><value>…</value>…``: the name is the text before the
    first key tag."""
    name = body.split(first_key_tag, 1)[0].strip()
    if not name or any(c in name for c in "<>{}\n"):
        raise MalformedCall("no function name")
    return RawCall(name, coerced_arguments(pairs, tools, name))
