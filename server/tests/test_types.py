"""``protocol/types.py``: ``Int`` takes JSON integers (``3`` and ``3.0``) and nothing else;
``Omittable`` fields may be left out but not sent as ``null``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, ValidationError

from mlxcel.protocol.types import Int, Omittable


class Strict(BaseModel):
    model_config = ConfigDict(strict=True)
    value: Int
    values: list[Int] = []


@pytest.mark.parametrize("value", [3, 3.0, -0.0, 0, 2**70, float(2**60)])
def test_accepts_integers_and_integral_floats(value: int | float) -> None:
    parsed = Strict.model_validate({"value": value}).value
    assert type(parsed) is int
    assert parsed == value


@pytest.mark.parametrize(
    "value", [3.5, "3", True, False, None, float("nan"), float("inf"), [3], {"a": 3}]
)
def test_rejects_everything_else(value: Any) -> None:
    with pytest.raises(ValidationError):
        Strict.model_validate({"value": value})


def test_works_inside_containers() -> None:
    assert Strict.model_validate({"value": 1, "values": [1, 2.0]}).values == [1, 2]
    with pytest.raises(ValidationError):
        Strict.model_validate({"value": 1, "values": [1, 2.5]})


def test_json_mode_follows_the_same_rules() -> None:
    assert Strict.model_validate_json('{"value": 3.0}').value == 3
    for raw in ('{"value": 3.5}', '{"value": "3"}', '{"value": true}'):
        with pytest.raises(ValidationError):
            Strict.model_validate_json(raw)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_float_accepted_exactly_when_integral(value: float) -> None:
    try:
        parsed = Strict.model_validate({"value": value}).value
    except ValidationError:
        assert not value.is_integer()
    else:
        assert value.is_integer() and parsed == value


class WithOmittable(BaseModel):
    model_config = ConfigDict(strict=True)
    name: Omittable[str] = None
    count: Omittable[Int] = None


def test_omittable_may_be_left_out_but_not_null() -> None:
    assert WithOmittable.model_validate({}).name is None
    assert WithOmittable.model_validate({"name": "a", "count": 2.0}).count == 2
    for body in ({"name": None}, {"count": None}):
        with pytest.raises(ValidationError, match="null is not allowed"):
            WithOmittable.model_validate(body)
