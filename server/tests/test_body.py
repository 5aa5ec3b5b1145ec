"""``protocol/body.py``: every malformed body is an OpenAI-style 400 naming the field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict, Field

from mlxcel.errors import InvalidRequestError, RequestTooLarge
from mlxcel.families.completions.completions_request import CompletionRequest
from mlxcel.protocol.body import parse_body, parse_json_object, validate_model
from mlxcel.protocol.types import Int, Omittable


class Inner(BaseModel):
    model_config = ConfigDict(strict=True)
    name: str


class Body(BaseModel):
    model_config = ConfigDict(strict=True)
    prompt: str
    n: Int = 1
    tags: list[str] = Field(default_factory=list)
    inner: Inner | None = None
    choice: str | list[Int] | None = None


def rejected(raw: bytes, model: type[BaseModel] = Body) -> InvalidRequestError:
    with pytest.raises(InvalidRequestError) as info:
        parse_body(model, raw)
    error = info.value
    assert error.status == 400
    assert error.type == "invalid_request_error"
    assert error.to_openai()["error"]["type"] == "invalid_request_error"
    return error


@pytest.mark.parametrize("raw", [b"", b"   \n\t", b"\n"])
def test_empty_body(raw: bytes) -> None:
    assert "empty" in rejected(raw).message


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b'{"prompt": "x",}',
        b"{'prompt': 'x'}",
        b'{"prompt": "x"} trailing',
        b"\xff\xfe\x00garbage",
        b'{"prompt": "\xc3("}',
    ],
)
def test_invalid_json(raw: bytes) -> None:
    assert "not valid JSON" in rejected(raw).message


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_standard_number_constants_are_not_json(constant: bytes) -> None:
    error = rejected(b'{"prompt": "x", "n": ' + constant + b"}")
    assert "not valid JSON" in error.message


def test_deeply_nested_json_is_a_400_not_a_crash() -> None:
    assert "not valid JSON" in rejected(b"[" * 5_000 + b"]" * 5_000).message


def test_a_hundred_thousand_levels_are_refused_before_parsing() -> None:
    """More objects and arrays than --max-json-values allows (a twentieth of it): 413."""
    with pytest.raises(RequestTooLarge):
        parse_body(Body, b"[" * 100_000 + b"]" * 100_000)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [(b"[]", "list"), (b"[1, 2]", "list"), (b'"x"', "str"), (b"3", "int"), (b"null", "NoneType")],
)
def test_non_object_json(raw: bytes, kind: str) -> None:
    error = rejected(raw)
    assert "must be a JSON object" in error.message
    assert kind in error.message


def test_missing_field_names_it() -> None:
    error = rejected(b'{"n": 2}')
    assert error.message == "Missing required parameter: 'prompt'."
    assert error.param == "prompt"


def test_missing_nested_field_names_its_path() -> None:
    error = rejected(b'{"prompt": "x", "inner": {}}')
    assert error.param == "inner.name"
    assert "'inner.name'" in error.message


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": 1}, "prompt"),
        ({"prompt": "x", "n": "3"}, "n"),
        ({"prompt": "x", "n": 3.5}, "n"),
        ({"prompt": "x", "n": True}, "n"),
        ({"prompt": "x", "tags": "a"}, "tags"),
        ({"prompt": "x", "tags": ["a", 2]}, "tags.1"),
        ({"prompt": "x", "inner": {"name": 5}}, "inner.name"),
        # Union members: pydantic tags the location with 'str' / 'list[...]', which are no field.
        ({"prompt": "x", "choice": {"a": 1}}, "choice"),
        ({"prompt": "x", "choice": [1.5]}, "choice"),
        ({"prompt": "x", "choice": [1, "a"]}, "choice"),
    ],
)
def test_wrong_type_names_the_field(body: dict[str, Any], param: str) -> None:
    error = rejected(json.dumps(body).encode())
    assert error.param == param
    assert error.message.startswith(f"Invalid value for '{param}': ")


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": {"a": 1}}, "prompt"),
        ({"prompt": [1.5]}, "prompt"),
        ({"prompt": [[1, 2], "x"]}, "prompt"),
        ({"prompt": "x", "stop": [1]}, "stop"),
        ({"prompt": "x", "logprobs": 21}, "logprobs"),
        ({"prompt": "x", "stream": 1}, "stream"),
        ({"prompt": "x", "stream_options": {"include_usage": "yes"}}, "stream_options"),
    ],
)
def test_completion_request_errors_name_real_fields(body: dict[str, Any], param: str) -> None:
    error = rejected(json.dumps(body).encode(), CompletionRequest)
    assert error.param is not None and error.param.split(".")[0] == param
    for tag in ("str", "list[", "function-"):
        assert tag not in error.param.split(".")[1:]


def test_valid_body_parses() -> None:
    body = parse_body(Body, b'{"prompt": "x", "n": 2.0, "choice": [1, 2.0]}')
    assert (body.prompt, body.n, body.choice) == ("x", 2, [1, 2])
    assert isinstance(body.n, int)


def test_parse_json_object_returns_the_dict() -> None:
    assert parse_json_object(b' {"a": [1, {"b": null}]} ') == {"a": [1, {"b": None}]}


def test_validator_value_error_is_a_400() -> None:
    class Limited(BaseModel):
        stop: list[str]

        def model_post_init(self, context: Any) -> None:
            if len(self.stop) > 1:
                raise ValueError("too many stops")

    with pytest.raises(InvalidRequestError) as info:
        validate_model(Limited, {"stop": ["a", "b"]})
    assert info.value.status == 400
    assert "too many stops" in info.value.message


class NoNull(BaseModel):
    model_config = ConfigDict(strict=True)
    user: Omittable[str] = None


def test_a_validator_message_is_given_in_its_own_words() -> None:
    """A field validator's ValueError reads as written, without pydantic's "Value error, "."""
    error = rejected(b'{"user": null}', NoNull)
    assert error.param == "user"
    assert error.message == (
        "Invalid value for 'user': null is not allowed here; leave the field out instead."
    )
