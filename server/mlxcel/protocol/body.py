"""Reading a JSON request body into a pydantic model with OpenAI-style 400s (never a 422).

A body is bounded before it is parsed (``json_shape.check_structure``: the number of values it
can hold), decoded as strict UTF-8, and checked after (nesting depth, lone surrogates); a
number beyond a double's range (``1e400``) is refused while parsing, so nothing downstream ever
sees an infinity.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InvalidRequestError, UnsupportedMediaType
from .json_shape import check_parsed, check_structure, finite_float, json_int

M = TypeVar("M", bound=BaseModel)


def _reject_constant(name: str) -> Any:
    # Python's json reads NaN/Infinity, which are not JSON (RFC 8259) and no client should send.
    raise ValueError(f"{name} is not a JSON value")


def require_json_media_type(content_type: str | None, route: str, hint: str = "") -> None:
    """415 for a JSON-only route's body declared as anything else; a body without a
    Content-Type is read as JSON (and gets its 400 if it is not)."""
    if content_type is None:
        return
    media = content_type.split(";")[0].strip().lower()
    if media != "application/json" and not media.endswith("+json"):
        raise UnsupportedMediaType(
            f"{route} takes a JSON body (Content-Type: application/json), not "
            f"{media or 'an empty Content-Type'}.{hint}")


def _utf8_text(raw: bytes) -> str:
    """The body as text. RFC 8259 section 8.1 requires UTF-8; ``json.loads`` on bytes would
    decode with ``surrogatepass``, so an encoded lone surrogate (``ED A0 80``) would reach the
    tokenizer as a string it cannot encode."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidRequestError(
            f"The request body is not valid JSON: it is not valid UTF-8 (RFC 8259 section 8.1 "
            f"requires it): byte 0x{raw[exc.start]:02x} at offset {exc.start}, {exc.reason}."
        ) from None


def parse_json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise InvalidRequestError("The request body is empty; a JSON object is required.")
    check_structure(raw)
    text = _utf8_text(raw)
    try:
        data = json.loads(text, parse_constant=_reject_constant, parse_float=finite_float,
                          parse_int=json_int)
    except InvalidRequestError:
        raise
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, the constants above
        raise InvalidRequestError(f"The request body is not valid JSON: {exc}") from None
    except RecursionError:
        message = "The request body is not valid JSON: nested too deeply."
        raise InvalidRequestError(message) from None
    if not isinstance(data, dict):
        raise InvalidRequestError(
            f"The request body must be a JSON object, not {type(data).__name__}."
        )
    check_parsed(data, raw)
    return data


def validate_model(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        message, param = _describe(exc, data)
        raise InvalidRequestError(message, param=param) from None
    except (ValueError, TypeError) as exc:
        raise InvalidRequestError(f"Invalid request: {exc}") from None


def parse_body(model: type[M], raw: bytes) -> M:
    return validate_model(model, parse_json_object(raw))


def _describe(exc: ValidationError, data: dict[str, Any]) -> tuple[str, str | None]:
    """The first error as one sentence and the dotted path of the offending field."""
    first = exc.errors(include_url=False)[0]
    missing = first.get("type") == "missing"
    param = ".".join(_field_path(first.get("loc", ()), data, missing)) or None
    msg = first.get("msg", "invalid value")
    error = (first.get("ctx") or {}).get("error")
    if first.get("type") == "value_error" and error is not None:
        msg = str(error).rstrip(".")  # the validator's own words, without pydantic's prefix
    if missing:
        return (f"Missing required parameter: '{param}'.", param)
    where = f"'{param}'" if param else "the request"
    return (f"Invalid value for {where}: {msg}.", param)


def _field_path(loc: Sequence[str | int], data: Any, missing: bool) -> list[str]:
    """The keys and indexes of ``loc`` that exist in the input (plus a missing field's name).

    Pydantic also puts union members ('str', 'list[int]', 'function-before[...]') and model
    names in ``loc``; they are no field a client sent, so following the input drops them.
    """
    path: list[str] = []
    node = data
    for i, part in enumerate(loc):
        if isinstance(node, dict) and isinstance(part, str) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif not (missing and i == len(loc) - 1):
            continue
        path.append(str(part))
    return path
