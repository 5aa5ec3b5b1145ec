"""Field types shared by request models.

JSON has one number type: JSON Schema's ``integer`` admits ``3.0``. Strict pydantic models
(needed so that ``0`` is not read as ``false``) would reject it, so integer fields accept an
integral float and nothing else beyond real integers.

``Omittable[X]``: a field the public API types as ``X`` without ``null`` (OpenAI's ``user``,
Anthropic's ``system``...). Leaving it out is fine (the model's ``None`` default); sending
``null`` is a 400, as the API that defines the field answers.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import BeforeValidator

T = TypeVar("T")


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(_integral)]


# MLX slices and indexes with 32-bit integers: a token window beyond this cannot be applied
# (a window longer than the context is the whole context anyway).
INT32_MAX = 2**31 - 1


def _not_null(value: Any) -> Any:
    if value is None:
        raise ValueError("null is not allowed here; leave the field out instead")
    return value


# The validator itself, for code that reads the annotations (the spec parity tests).
NOT_NULL = BeforeValidator(_not_null)

Omittable = Annotated[T | None, NOT_NULL]
