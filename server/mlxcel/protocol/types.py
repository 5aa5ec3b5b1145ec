"""Field types shared by request models.

JSON has one number type: JSON Schema's ``integer`` admits ``3.0``. Strict pydantic models
(needed so that ``0`` is not read as ``false``) would reject it, so integer fields accept an
integral float and nothing else beyond real integers.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator


def _integral(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Int = Annotated[int, BeforeValidator(_integral)]


# MLX slices and indexes with 32-bit integers: a token window beyond this cannot be applied
# (a window longer than the context is the whole context anyway).
INT32_MAX = 2**31 - 1
