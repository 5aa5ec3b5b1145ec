"""Bounds that make a forced tool call finish inside ``max_tokens``.

A grammar built from the tool schemas only says *what* a call may contain. A free JSON string
(no ``maxLength``, ``enum``, ``const``, ``pattern`` or ``format``) has no end, and neither has an
object that admits undeclared keys, so a weak model can spend the whole budget inside one value
and stop with ``finish_reason: length`` and no call. Before the grammar is compiled, each tool's
``parameters`` is copied with:

* ``additionalProperties: false`` on objects that declare ``properties`` and say nothing else
  about extra keys (the call then holds only the declared arguments);
* ``maxItems`` (``ARRAY_ITEMS_CAP``) on arrays without one;
* ``maxLength`` on every free string: the string budget (``max_tokens`` less a reserve for the
  call's markup, names and punctuation) shared among the free strings a call can hold, never
  above a declared ``maxLength`` and never below ``MIN_STRING_CHARS``.

llguidance honours ``maxLength``/``maxItems``, so decoding is forced to close the value. The bounds
apply only to the grammar of a forced call; the tools the template renders are unchanged.
"""

from __future__ import annotations

import copy
from typing import Any

from .tool_formats.base import Tools

ARRAY_ITEMS_CAP = 8
MIN_STRING_CHARS = 4
MAX_STRING_CHARS = 4096
# Tokens kept for the call's markup, function name, keys and JSON punctuation.
MARKUP_RESERVE_TOKENS = 24
RESERVE_TOKENS_PER_PROPERTY = 4
# A byte-level BPE token spells at least one byte; a JSON string character may take a few
# (UTF-8, escapes), so a string gets a share of the budget in characters at this rate.
TOKENS_PER_CHAR = 2

_CLOSED_STRING_KEYS = ("maxLength", "enum", "const", "pattern", "format")
_BRANCH_KEYS = ("anyOf", "oneOf", "allOf")


def _types(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def _free_string(schema: dict[str, Any]) -> bool:
    return "string" in _types(schema) and not any(k in schema for k in _CLOSED_STRING_KEYS)


def _walk(schema: Any, visit: Any) -> None:
    """Call ``visit`` on every sub-schema (properties, items, branches), depth first."""
    if not isinstance(schema, dict):
        return
    visit(schema)
    for sub in (schema.get("properties") or {}).values():
        _walk(sub, visit)
    if isinstance(schema.get("items"), dict):
        _walk(schema["items"], visit)
    if isinstance(schema.get("additionalProperties"), dict):
        _walk(schema["additionalProperties"], visit)
    for key in (*_BRANCH_KEYS, "prefixItems"):
        for sub in schema.get(key) or []:
            _walk(sub, visit)
    # Referenced definitions are bounded too (their share is not counted per reference).
    for key in ("$defs", "definitions"):
        for sub in (schema.get(key) or {}).values():
            _walk(sub, visit)


def _close(schema: dict[str, Any]) -> None:
    if "properties" in schema and "additionalProperties" not in schema \
            and "patternProperties" not in schema:
        schema["additionalProperties"] = False
    if "array" in _types(schema) and "maxItems" not in schema:
        schema["maxItems"] = max(ARRAY_ITEMS_CAP, int(schema.get("minItems", 0)))


def _slots(schema: Any) -> tuple[int, int]:
    """(free strings, properties) one call can hold at most, after ``_close``."""
    if not isinstance(schema, dict):
        return 0, 0
    strings = 1 if _free_string(schema) else 0
    properties = 0
    for sub in (schema.get("properties") or {}).values():
        s, p = _slots(sub)
        strings, properties = strings + s, properties + p + 1
    if isinstance(schema.get("additionalProperties"), dict):
        s, p = _slots(schema["additionalProperties"])
        strings, properties = strings + s, properties + p + 1
    if isinstance(schema.get("items"), dict):
        s, p = _slots(schema["items"])
        count = int(schema.get("maxItems", ARRAY_ITEMS_CAP))
        strings, properties = strings + count * s, properties + count * (p + 1)
    for key in _BRANCH_KEYS:
        branches = [_slots(sub) for sub in schema.get(key) or []]
        if branches:
            strings += max(b[0] for b in branches)
            properties += max(b[1] for b in branches)
    return strings, properties


def string_cap(parameters: dict[str, Any], max_tokens: int) -> int:
    strings, properties = _slots(parameters)
    spare = max_tokens - MARKUP_RESERVE_TOKENS - RESERVE_TOKENS_PER_PROPERTY * properties
    share = spare // (TOKENS_PER_CHAR * max(strings, 1))
    return max(MIN_STRING_CHARS, min(MAX_STRING_CHARS, share))


def bounded_parameters(parameters: dict[str, Any], max_tokens: int) -> dict[str, Any]:
    bounded = copy.deepcopy(parameters)
    _walk(bounded, _close)
    cap = string_cap(bounded, max_tokens)

    def limit(schema: dict[str, Any]) -> None:
        if _free_string(schema):
            schema["maxLength"] = max(cap, int(schema.get("minLength", 0)))

    _walk(bounded, limit)
    return bounded


def bounded_tools(tools: Tools, max_tokens: int) -> Tools:
    """Copies of ``tools`` whose parameters carry the bounds above (the originals untouched)."""
    out: Tools = []
    for tool in tools:
        function = dict(tool.get("function") or {})
        params = function.get("parameters")
        if isinstance(params, dict):
            function["parameters"] = bounded_parameters(params, max_tokens)
        out.append({**tool, "function": function})
    return out
