"""``response_format`` on /v1/chat/completions and /v1/completions: ``text`` (or absent) is
unconstrained, ``json_schema`` is constrained by llguidance, ``json_object`` is a 400."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidRequestError
from ..generation import LogitsProcessorFactory
from ..generation.model_view import ModelView
from .grammar import compile_grammar, json_schema_grammar
from .limits import check_schema_limits

PARAM = "response_format"


def is_constraining(response_format: dict[str, Any] | None) -> bool:
    return (response_format or {}).get("type", "text") != "text"


def check_response_format(response_format: Any) -> None:
    """The shape OpenAI's spec gives ``response_format`` (a ``type``; for ``json_schema`` a
    wrapper with a string ``name`` and ``description`` and a boolean or null ``strict``) plus
    mlxcel's own rule: the wrapper carries an object ``schema``. None: the field was left out."""
    if response_format is None:
        return
    if not isinstance(response_format, dict) or not isinstance(response_format.get("type"), str):
        raise InvalidRequestError("response_format must be an object with a string type.",
                                  param=PARAM)
    if response_format["type"] != "json_schema":
        return  # text; json_object and unknown types are refused where it is read
    wrapper = response_format.get("json_schema")
    if not isinstance(wrapper, dict):
        raise InvalidRequestError(
            "response_format.json_schema must be an object with a `schema`.", param=PARAM
        )
    if not isinstance(wrapper.get("schema"), dict):
        raise InvalidRequestError("response_format.json_schema.schema must be an object.",
                                  param=f"{PARAM}.json_schema.schema")
    for key in ("name", "description"):
        if key in wrapper and not isinstance(wrapper[key], str):
            raise InvalidRequestError(f"response_format.json_schema.{key} must be a string.",
                                      param=f"{PARAM}.json_schema.{key}")
    if wrapper.get("strict") is not None and not isinstance(wrapper["strict"], bool):
        raise InvalidRequestError("response_format.json_schema.strict must be a boolean or null.",
                                  param=f"{PARAM}.json_schema.strict")


def _schema_of(response_format: dict[str, Any]) -> dict[str, Any]:
    """A json_schema format's schema (``check_response_format`` has passed it), bounded."""
    schema: dict[str, Any] = response_format["json_schema"]["schema"]
    check_schema_limits(schema, f"{PARAM}.json_schema.schema")
    return schema


def response_format_factories(
    model: ModelView, response_format: dict[str, Any] | None
) -> tuple[LogitsProcessorFactory, ...]:
    """The logits processors a ``response_format`` asks for (none for ``text``)."""
    check_response_format(response_format)
    if response_format is None:
        return ()
    kind = response_format.get("type", "text")
    if kind == "text":
        return ()
    if kind == "json_object":
        raise InvalidRequestError(
            "response_format type 'json_object' is not supported; use 'json_schema'.",
            param=PARAM,
        )
    if kind != "json_schema":
        raise InvalidRequestError(
            f"response_format type must be 'text' or 'json_schema', not {str(kind)[:40]!r}.",
            param=PARAM,
        )
    schema = _schema_of(response_format)
    try:
        grammar = json_schema_grammar(schema)
    except (ValueError, TypeError, RuntimeError) as exc:
        short = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else "invalid schema"
        raise InvalidRequestError(f"The JSON schema cannot be compiled: {short}",
                                  param=PARAM) from None
    return (compile_grammar(model, grammar, PARAM).factory(),)
