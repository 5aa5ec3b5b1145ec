"""Bounds that make a forced tool call finish inside ``max_tokens``.

A grammar built from the tool schemas only says *what* a call may contain. A free JSON string
(no ``maxLength``, ``enum``, ``const``, ``pattern`` or ``format``) has no end, and neither has an
object that admits undeclared keys, so a weak model can spend the whole budget inside one value
and stop with ``finish_reason: length`` and no call. Before the grammar is compiled, each tool's
``parameters`` is copied with:

* ``additionalProperties: false`` on objects that declare ``properties`` and say nothing else
  about extra keys (the call then holds only the declared arguments);
* ``maxItems`` (``ARRAY_ITEMS_CAP``) on arrays without one;
* ``maxLength`` on every free string: the value budget (``max_tokens`` less the call's markup,
  measured on the format's grammar where it spells the markup, and a reserve for names, keys
  and punctuation) shared among the free strings and numbers a call can
  hold, never above a declared ``maxLength`` and never below ``MIN_STRING_CHARS``;
* the bounds of every JSON-schema grammar (``structured/json_bounds``: numbers without an
  exponent, open values filled with bounded ones), numbers with the digits their share allows
  (``number_caps``).

llguidance honours ``maxLength``/``maxItems``, so decoding is forced to close the value. The bounds
apply only to the grammar of a forced call; the tools the template renders are unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..structured.json_bounds import NumberCaps, bounded_schema, close_object, types_of, walk_schema
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
MIN_INTEGRAL_DIGITS = 3

_CLOSED_STRING_KEYS = ("maxLength", "enum", "const", "pattern", "format")
_BRANCH_KEYS = ("anyOf", "oneOf", "allOf")


def _free_string(schema: dict[str, Any]) -> bool:
    return "string" in types_of(schema) and not any(k in schema for k in _CLOSED_STRING_KEYS)


def _free_number(schema: dict[str, Any]) -> bool:
    return bool(types_of(schema) & {"integer", "number"}) and "enum" not in schema \
        and "const" not in schema


def _int(value: Any, default: int = 0) -> int:
    """A schema's count keyword, or ``default`` when it is not a number (llguidance then
    refuses the schema)."""
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else default


def _subs(schema: dict[str, Any], key: str) -> list[Any]:
    value = schema.get(key)
    if isinstance(value, dict):
        return list(value.values())
    return list(value) if isinstance(value, list) else []


def _close(schema: dict[str, Any]) -> None:
    close_object(schema)
    if "array" in types_of(schema) and "maxItems" not in schema:
        schema["maxItems"] = max(ARRAY_ITEMS_CAP, _int(schema.get("minItems")))


def _slots(schema: Any) -> tuple[int, int]:
    """(free strings and numbers, properties) one call can hold at most, after ``_close``."""
    if not isinstance(schema, dict):
        return 0, 0
    values = 1 if _free_string(schema) or _free_number(schema) else 0
    properties = 0
    for sub in _subs(schema, "properties"):
        s, p = _slots(sub)
        values, properties = values + s, properties + p + 1
    if isinstance(schema.get("additionalProperties"), dict):
        s, p = _slots(schema["additionalProperties"])
        values, properties = values + s, properties + p + 1
    if isinstance(schema.get("items"), dict):
        s, p = _slots(schema["items"])
        count = _int(schema.get("maxItems"), ARRAY_ITEMS_CAP)
        values, properties = values + count * s, properties + count * (p + 1)
    for key in _BRANCH_KEYS:
        branches = [_slots(sub) for sub in _subs(schema, key)]
        if branches:
            values += max(b[0] for b in branches)
            properties += max(b[1] for b in branches)
    return values, properties


def string_cap(parameters: dict[str, Any], max_tokens: int,
               markup_tokens: int = MARKUP_RESERVE_TOKENS) -> int:
    """Characters each free value (string or number) of a call may take, once the call's
    markup (at least ``MARKUP_RESERVE_TOKENS``) and keys are paid for."""
    values, properties = _slots(parameters)
    markup = max(MARKUP_RESERVE_TOKENS, markup_tokens)
    spare = max_tokens - markup - RESERVE_TOKENS_PER_PROPERTY * properties
    share = spare // (TOKENS_PER_CHAR * max(values, 1))
    return max(MIN_STRING_CHARS, min(MAX_STRING_CHARS, share))


def number_caps(share: int) -> NumberCaps:
    """Digits for a number given ``share`` characters: about half before the point."""
    return NumberCaps(integral=max(MIN_INTEGRAL_DIGITS, share // 2 + 1),
                      fraction=max(1, share // 2 - 1))


def _closed(parameters: dict[str, Any], caps: NumberCaps) -> dict[str, Any]:
    bounded = bounded_schema(parameters, caps)
    bounded.pop("x-guidance", None)  # the call's grammar sets the style at its root
    walk_schema(bounded, _close)
    return bounded


def bounded_parameters(parameters: dict[str, Any], max_tokens: int,
                       markup_tokens: int = MARKUP_RESERVE_TOKENS) -> dict[str, Any]:
    # The share is counted on the closed schema (open values filled in), then applied.
    cap = string_cap(_closed(parameters, NumberCaps()), max_tokens, markup_tokens)
    bounded = _closed(parameters, number_caps(cap))

    def limit(schema: dict[str, Any]) -> None:
        if _free_string(schema):
            schema["maxLength"] = max(cap, _int(schema.get("minLength")))

    walk_schema(bounded, limit)
    return bounded


def bounded_tools(tools: Tools, max_tokens: int,
                  markup_tokens: Callable[[dict[str, Any]], int] | None = None) -> Tools:
    """Copies of ``tools`` whose parameters carry the bounds above (the originals untouched);
    ``markup_tokens(tool)`` measures the markup of a call to ``tool`` where the format knows."""
    out: Tools = []
    for tool in tools:
        function = dict(tool.get("function") or {})
        params = function.get("parameters")
        if isinstance(params, dict):
            markup = markup_tokens(tool) if markup_tokens else MARKUP_RESERVE_TOKENS
            function["parameters"] = bounded_parameters(params, max_tokens, markup)
        out.append({**tool, "function": function})
    return out
