"""The bounds the suite's schemathesis run puts on generated bodies, read from the spec.

``x-mlxcel-fuzz-maximum`` / ``x-mlxcel-fuzz-minimum`` on a property (``max_tokens``,
``n_probs``...) keep generation requests short; ``x-mlxcel-fuzz-skip`` leaves a property out
(it names server state); token-id arrays stay inside the fixture's vocabulary. A generation
body that sets no length at all gets its route's length field at that maximum
(``bound_generation``): left out, the server's own default applies (512 tokens on the
reference, the whole context on llama-server), minutes on a real model on CPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeGuard

from . import spec


def _properties(node: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every (name, schema) of a ``properties`` object anywhere under ``node``."""
    if isinstance(node, dict):
        for name, prop in (node.get("properties") or {}).items():
            if isinstance(prop, dict):
                yield name, prop
        for value in node.values():
            yield from _properties(value)
    elif isinstance(node, list):
        for value in node:
            yield from _properties(value)


def fuzz_limits() -> dict[str, int]:
    """Property -> fuzz maximum; -1 for properties marked ``x-mlxcel-fuzz-skip`` (left out of
    generated bodies: they name server state, e.g. a stored response id)."""
    limits: dict[str, int] = {}
    for name, prop in _properties(spec.load_spec()):
        if "x-mlxcel-fuzz-maximum" in prop:
            limits[name] = int(prop["x-mlxcel-fuzz-maximum"])
        if prop.get("x-mlxcel-fuzz-skip"):
            limits[name] = -1
    return limits


# Token-id arrays: ids outside the vocabulary are documented errors, not fuzz targets.
_TOKEN_ARRAYS = ("prompt", "tokens", "input", "content")


def _token_bounds() -> tuple[int, int]:
    item = spec.load_spec()["components"]["schemas"]["PromptTokenId"]
    return int(item["x-mlxcel-fuzz-minimum"]), int(item["x-mlxcel-fuzz-maximum"])


def _clamp_ids(value: Any, low: int, high: int) -> Any:
    if isinstance(value, list):
        return [_clamp_ids(v, low, high) for v in value]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return min(max(int(value), low), high)
    return value


def fuzz_floors() -> dict[str, int]:
    """``x-mlxcel-fuzz-minimum`` on a property (e.g. ``n_predict``, whose -1 means "fill the
    context"): values below it are raised before sending."""
    return {name: int(prop["x-mlxcel-fuzz-minimum"])
            for name, prop in _properties(spec.load_spec()) if "x-mlxcel-fuzz-minimum" in prop}


def _number(value: Any) -> TypeGuard[int | float]:
    # JSON Schema's integers include 5861.0, and schemathesis generates such floats for an
    # integer property: they are bounded like any other value of it.
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def clamp(body: Any, limits: dict[str, int]) -> None:
    if not isinstance(body, dict):
        return
    for name, limit in limits.items():
        if limit < 0:
            body.pop(name, None)
            continue
        value = body.get(name)
        if _number(value) and value > limit:
            body[name] = limit
    for name, floor in fuzz_floors().items():
        value = body.get(name)
        if _number(value) and value < floor:
            body[name] = floor
    low, high = _token_bounds()
    for name in _TOKEN_ARRAYS:
        if isinstance(body.get(name), list):
            body[name] = _clamp_ids(body[name], low, high)


# The fields that bound how many tokens a route generates, in the order one is chosen.
LENGTH_FIELDS = ("max_output_tokens", "max_tokens", "n_predict", "max_completion_tokens")


def _top_level(schema: Any, seen: int = 0) -> tuple[set[str], set[str]]:
    """(properties, required) of a request schema's top-level object, through ``allOf``,
    ``anyOf``, ``oneOf`` and references."""
    schema = spec.resolved(schema)
    if not isinstance(schema, dict) or seen > 8:
        return set(), set()
    names = set(schema.get("properties") or {})
    required = set(schema.get("required") or [])
    for key in ("allOf", "anyOf", "oneOf"):
        for part in schema.get(key) or []:
            more, needed = _top_level(part, seen + 1)
            names |= more
            required |= needed if key == "allOf" else set()
    return names, required


def bound_generation(body: Any, method: str, path: str, limits: dict[str, int]) -> None:
    """Give a body that sets none of its route's length fields the first one its schema
    declares, at its fuzz maximum. A required one is left out: its absence is the invalid
    part of a negative case, refused before anything is generated."""
    if not isinstance(body, dict):
        return
    schema = spec.request_schema(method, path)
    names, required = _top_level(schema) if schema is not None else (set(), set())
    declared = [name for name in LENGTH_FIELDS if name in names and limits.get(name, -1) > 0]
    if not declared or any(body.get(name) is not None for name in declared):
        return
    if declared[0] not in required:
        body[declared[0]] = limits[declared[0]]
