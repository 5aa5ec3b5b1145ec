"""The schema limits applied before grammar compilation (a DoS guard): serialized size, nesting
depth and ``$ref`` count. Error messages are short and never echo the schema."""

from __future__ import annotations

import json
from typing import Any

from .. import limits as request_limits
from ..errors import InvalidRequestError

MAX_SCHEMA_BYTES = 64 * 1024
MAX_SCHEMA_REFS = 64


def _depth_and_refs(schema: Any, max_depth: int) -> tuple[int, int]:
    """Nesting depth of objects/arrays and the number of ``$ref`` keys, without recursion."""
    deepest, refs = 0, 0
    stack: list[tuple[Any, int]] = [(schema, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            deepest = max(deepest, depth)
            refs += 1 if "$ref" in node else 0
            stack.extend((v, depth + 1) for v in node.values())
        elif isinstance(node, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in node)
        if deepest > max_depth:
            break
    return deepest, refs


def check_schema_limits(schema: Any, param: str) -> None:
    """400 when ``schema`` exceeds a limit; the message names the limit, not the schema."""
    if not isinstance(schema, dict):
        raise InvalidRequestError("The JSON schema must be an object.", param=param)
    size = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_SCHEMA_BYTES:
        raise InvalidRequestError(
            f"The JSON schema is {size} bytes serialized; the limit is {MAX_SCHEMA_BYTES}.",
            param=param,
        )
    max_depth = request_limits.active().max_schema_depth
    depth, refs = _depth_and_refs(schema, max_depth)
    if depth > max_depth:
        raise InvalidRequestError(
            f"The JSON schema nests deeper than {max_depth} levels (--max-schema-depth).",
            param=param,
        )
    if refs > MAX_SCHEMA_REFS:
        raise InvalidRequestError(
            f"The JSON schema has {refs} $ref entries; the limit is {MAX_SCHEMA_REFS}.",
            param=param,
        )
