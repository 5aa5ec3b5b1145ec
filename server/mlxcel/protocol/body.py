"""Reading a JSON request body into a pydantic model with OpenAI-style 400s (never a 422)."""

from __future__ import annotations

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InvalidRequestError

M = TypeVar("M", bound=BaseModel)


def parse_json_object(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise InvalidRequestError("The request body is empty; a JSON object is required.")
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InvalidRequestError(f"The request body is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(
            f"The request body must be a JSON object, not {type(data).__name__}."
        )
    return data


def validate_model(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        message, param = _describe(exc)
        raise InvalidRequestError(message, param=param) from None
    except (ValueError, TypeError) as exc:
        raise InvalidRequestError(f"Invalid request: {exc}") from None


def parse_body(model: type[M], raw: bytes) -> M:
    return validate_model(model, parse_json_object(raw))


def _describe(exc: ValidationError) -> tuple[str, str | None]:
    """The first error as one sentence and the dotted path of the offending field."""
    first = exc.errors(include_url=False)[0]
    loc = [str(p) for p in first.get("loc", ()) if not str(p).startswith("function-")]
    param = ".".join(loc) or None
    msg = first.get("msg", "invalid value")
    if first.get("type") == "missing":
        return (f"Missing required parameter: '{param}'.", param)
    where = f"'{param}'" if param else "the request"
    return (f"Invalid value for {where}: {msg}.", param)
