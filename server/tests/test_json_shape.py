"""``protocol/json_shape.py``: a body's values are bounded before parsing, its depth and its
strings after, and a number beyond a double is refused while parsing."""

from __future__ import annotations

import pytest

from mlxcel import limits
from mlxcel.errors import InvalidRequestError, RequestTooLarge
from mlxcel.limits import RequestLimits
from mlxcel.protocol.body import parse_json_object


@pytest.fixture
def small_limits() -> object:
    saved = limits.active()
    limits.install(RequestLimits(max_json_values=200, max_json_depth=8))
    yield
    limits.install(saved)


def test_values_beyond_the_limit_are_413(small_limits: object) -> None:
    with pytest.raises(RequestTooLarge, match="JSON values"):
        parse_json_object(b'{"a": [' + b"0," * 200 + b"0]}")


def test_objects_and_arrays_are_bounded_at_a_twentieth(small_limits: object) -> None:
    with pytest.raises(RequestTooLarge, match="objects and arrays"):
        parse_json_object(b'{"a": [' + b"[]," * 10 + b"[]]}")


def test_structure_inside_strings_does_not_count(small_limits: object) -> None:
    data = parse_json_object(b'{"a": "' + b"[{,\\\"" * 500 + b'"}')
    assert data["a"].startswith('[{,"')


def test_depth_beyond_the_limit_is_400(small_limits: object) -> None:
    parse_json_object(b'{"a":' + b"[" * 7 + b"]" * 7 + b"}")
    with pytest.raises(InvalidRequestError, match="nests deeper than 8"):
        parse_json_object(b'{"a":' + b"[" * 8 + b"]" * 8 + b"}")


@pytest.mark.parametrize("number", [b"1e400", b"-1e400", b"1.5e309"])
def test_a_number_beyond_a_double_is_400(number: bytes) -> None:
    with pytest.raises(InvalidRequestError, match="out of range"):
        parse_json_object(b'{"temperature": ' + number + b"}")


def test_big_integers_and_small_floats_are_numbers() -> None:
    data = parse_json_object(b'{"a": 123456789012345678901234567890, "b": 1e-400, "c": 1e308}')
    assert data == {"a": 123456789012345678901234567890, "b": 0.0, "c": 1e308}


@pytest.mark.parametrize("raw", [b'{"a": "\\ud800"}', b'{"\\udfff": 1}', b'{"a": ["x\\uDBFFy"]}'])
def test_lone_surrogates_are_400(raw: bytes) -> None:
    with pytest.raises(InvalidRequestError, match="surrogate"):
        parse_json_object(raw)


def test_a_surrogate_pair_is_one_character() -> None:
    assert parse_json_object(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}
