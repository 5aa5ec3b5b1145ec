"""Bounds on every grammar built from a JSON schema, so constrained output always ends.

A JSON schema says what a value may be, not how long it may get: a free number has no end
(``{"a": 2111111111…`` until ``max_tokens``), and neither has whitespace nor an object that
admits any key. llama.cpp's schema converter bounds them (integral part up to 16 digits,
fraction up to 16, whitespace up to 20 characters, no key that is not declared); llguidance
has no digit limit, so the schema is rewritten before it is compiled:

* **numbers**: an ``integer`` or ``number`` without a bound gets ``minimum``/``maximum`` of
  ``INTEGRAL_DIGITS`` digits, and a ``number`` without ``multipleOf`` gets ``multipleOf``
  ``10**-FRACTION_DIGITS`` (llguidance then writes numbers without an exponent, at most that
  many fraction digits; 10 is the finest step it accepts). Declared bounds are kept.
* **open values**: a value that may be anything (``{}``, ``true``, an array without
  ``items``, an object without ``properties``) becomes a bounded any-JSON value, nested at most
  ``ANY_DEPTH`` levels.
* **closed objects**: an object that declares ``properties`` and says nothing about other keys
  gets ``additionalProperties: false``, as llama.cpp reads it.
* **whitespace**: the JSON style models write (``", "`` and ``": "``, nothing else), whatever
  the schema's own ``x-guidance`` asks.

The bounds apply to the grammar only: validation of requests and responses sees the caller's
schema unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

INTEGRAL_DIGITS = 15  # the largest integer a double holds exactly has 15-16 digits
FRACTION_DIGITS = 10  # llguidance rejects a finer multipleOf
ANY_DEPTH = 3

# Whitespace as models write JSON (and no free-form runs a weak model can loop in).
JSON_STYLE: dict[str, Any] = {
    "whitespace_flexible": False,
    "item_separator": ", ",
    "key_separator": ": ",
}
_STYLE_KEYS = ("whitespace_flexible", "whitespace_pattern", "item_separator", "key_separator")
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly", "$schema", "$id"})
_BRANCH_KEYS = ("anyOf", "oneOf", "allOf")


@dataclass(frozen=True)
class NumberCaps:
    """Digits a number may have before and after the decimal point."""

    integral: int = INTEGRAL_DIGITS
    fraction: int = FRACTION_DIGITS

    def __post_init__(self) -> None:
        object.__setattr__(self, "integral", max(1, min(self.integral, INTEGRAL_DIGITS)))
        object.__setattr__(self, "fraction", max(1, min(self.fraction, FRACTION_DIGITS)))

    @property
    def largest(self) -> int:
        return int(10**self.integral - 1)

    @property
    def step(self) -> float:
        return float(f"1e-{self.fraction}")


def types_of(schema: dict[str, Any]) -> set[str]:
    kind = schema.get("type")
    return set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()


def walk_schema(schema: Any, visit: Callable[[dict[str, Any]], None]) -> None:
    """Call ``visit`` on every sub-schema (properties, items, branches, definitions), parents
    before children; ``visit`` may rewrite a node's children before they are walked."""
    if not isinstance(schema, dict):
        return
    visit(schema)
    for key in ("properties", "patternProperties", "$defs", "definitions"):
        subs = schema.get(key)
        for sub in subs.values() if isinstance(subs, dict) else ():
            walk_schema(sub, visit)
    for key in ("items", "additionalProperties", "not", "contains"):
        walk_schema(schema.get(key), visit)
    for key in (*_BRANCH_KEYS, "prefixItems"):
        subs = schema.get(key)
        for sub in subs if isinstance(subs, list) else ():
            walk_schema(sub, visit)


def is_open(schema: Any) -> bool:
    """A schema any JSON value satisfies (``true``, ``{}`` or annotations only)."""
    return schema is True or (isinstance(schema, dict) and set(schema) <= _ANNOTATIONS)


def any_value(caps: NumberCaps, depth: int = ANY_DEPTH) -> dict[str, Any]:
    """Any JSON value, with bounded numbers and at most ``depth`` levels of nesting."""
    number = {"type": "number", "exclusiveMinimum": -caps.largest - 1,
              "exclusiveMaximum": caps.largest + 1, "multipleOf": caps.step}
    options: list[dict[str, Any]] = [{"type": "null"}, {"type": "boolean"}, number,
                                     {"type": "string"}]
    if depth > 0:
        inner = any_value(caps, depth - 1)
        options += [{"type": "array", "items": inner},
                    {"type": "object", "additionalProperties": inner}]
    return {"anyOf": options}


def close_object(schema: dict[str, Any]) -> None:
    """``additionalProperties: false`` on an object that declares its keys and nothing else."""
    if "properties" in schema and "additionalProperties" not in schema \
            and "patternProperties" not in schema:
        schema["additionalProperties"] = False


def _bound_number(schema: dict[str, Any], caps: NumberCaps) -> None:
    """Integers get ``minimum``/``maximum`` of ``caps.integral`` digits; numbers get the
    exclusive bounds ``±10**caps.integral`` (so any fraction fits) and a ``multipleOf``."""
    kinds = types_of(schema)
    if not kinds & {"integer", "number"} or "enum" in schema or "const" in schema:
        return
    fractional = "number" in kinds
    low_key, high_key = ("exclusiveMinimum", "exclusiveMaximum") if fractional \
        else ("minimum", "maximum")
    limit = caps.largest + 1 if fractional else caps.largest
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is None:
        schema[low_key] = min(-limit, high) if isinstance(high, (int, float)) else -limit
    if high is None:
        schema[high_key] = max(limit, low) if isinstance(low, (int, float)) else limit
    if fractional and "multipleOf" not in schema:
        schema["multipleOf"] = caps.step


def _fill_open_values(schema: dict[str, Any], caps: NumberCaps) -> None:
    kinds = types_of(schema)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for key, sub in properties.items():
            if is_open(sub):
                properties[key] = any_value(caps)
    if is_open(schema.get("additionalProperties")) and "additionalProperties" in schema:
        schema["additionalProperties"] = any_value(caps)
    elif "object" in kinds and "properties" not in schema \
            and "additionalProperties" not in schema and "patternProperties" not in schema:
        schema["additionalProperties"] = any_value(caps)
    if "array" in kinds and is_open(schema.get("items", True)):
        schema["items"] = any_value(caps)


def bounded_schema(schema: dict[str, Any] | bool, caps: NumberCaps | None = None
                   ) -> dict[str, Any]:
    """A copy of ``schema`` with the bounds above, ready for llguidance."""
    caps = caps or NumberCaps()
    if is_open(schema) or not isinstance(schema, dict):
        bounded: dict[str, Any] = any_value(caps) if is_open(schema) else {"not": {}}
    else:
        bounded = copy.deepcopy(schema)

    def visit(node: dict[str, Any]) -> None:
        close_object(node)
        _fill_open_values(node, caps)
        _bound_number(node, caps)

    walk_schema(bounded, visit)
    options = bounded.get("x-guidance")
    kept = {k: v for k, v in options.items() if k not in _STYLE_KEYS} \
        if isinstance(options, dict) else {}
    bounded["x-guidance"] = {**kept, **JSON_STYLE}
    return bounded
