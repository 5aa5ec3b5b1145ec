"""``response_format`` on /v1/chat/completions and /v1/completions: ``text`` (or absent) is
unconstrained, ``json_schema`` is constrained by llguidance, ``json_object`` is a 400."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidRequestError
from ..generation import LogitsProcessorFactory
from ..generation.model import ModelView
from .grammar import compile_grammar, json_schema_grammar
from .limits import check_schema_limits

PARAM = "response_format"


def is_constraining(response_format: dict[str, Any] | None) -> bool:
    return (response_format or {}).get("type", "text") != "text"


def _schema_of(response_format: dict[str, Any]) -> dict[str, Any]:
    wrapper = response_format.get("json_schema")
    if not isinstance(wrapper, dict):
        raise InvalidRequestError(
            "response_format.json_schema must be an object with a `schema`.", param=PARAM
        )
    schema = wrapper.get("schema")
    if schema is None:
        raise InvalidRequestError("response_format.json_schema.schema is required.", param=PARAM)
    check_schema_limits(schema, f"{PARAM}.json_schema.schema")
    return schema


def response_format_factories(
    model: ModelView, response_format: dict[str, Any] | None
) -> tuple[LogitsProcessorFactory, ...]:
    """The logits processors a ``response_format`` asks for (none for ``text``)."""
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
