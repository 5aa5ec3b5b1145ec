"""llama-server's own constraint fields: ``grammar`` (a GBNF grammar, or a Lark one in
llguidance's syntax) and ``json_schema`` (a JSON schema, ``{}`` meaning any object), accepted on
``/completion``, ``/v1/completions`` and ``/v1/chat/completions`` as llama-server accepts them.

GBNF is converted with llguidance's own GBNF-to-Lark converter; a grammar that does not convert
or compile is a 400 naming the field. When both fields are sent, ``json_schema`` wins (as
llama-server documents it). The schema gets the same bounds as every schema grammar
(``json_bounds``).
"""

from __future__ import annotations

from typing import Any

from llguidance.gbnf_to_lark import any_to_lark

from ..errors import InvalidRequestError
from ..generation import LogitsProcessorFactory
from ..generation.model_view import ModelView
from .grammar import compile_grammar, json_schema_grammar, lark_grammar
from .limits import check_schema_limits

MAX_GRAMMAR_BYTES = 64 * 1024


def _short(error: Exception | str) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:160] if text else "invalid grammar"


def _schema_factory(model: ModelView, schema: Any) -> LogitsProcessorFactory:
    if schema == {}:
        schema = {"type": "object"}  # llama-server: an empty schema is any object
    check_schema_limits(schema, "json_schema")
    try:
        grammar = json_schema_grammar(schema)
    except (ValueError, TypeError, RuntimeError) as exc:
        raise InvalidRequestError(f"json_schema cannot be compiled: {_short(exc)}",
                                  param="json_schema") from None
    return compile_grammar(model, grammar, "json_schema").factory()


def _grammar_factory(model: ModelView, text: str) -> LogitsProcessorFactory:
    if len(text.encode()) > MAX_GRAMMAR_BYTES:
        raise InvalidRequestError(
            f"grammar is longer than {MAX_GRAMMAR_BYTES} bytes.", param="grammar")
    try:
        lark = any_to_lark(text)
        grammar = lark_grammar(lark)
    except Exception as exc:  # noqa: BLE001 - the converter raises bare Exceptions on bad input
        raise InvalidRequestError(f"grammar is not a valid GBNF or Lark grammar: "
                                  f"{_short(exc)}", param="grammar") from None
    try:
        compiled = compile_grammar(model, grammar, "grammar")
    except InvalidRequestError as exc:
        raise InvalidRequestError(f"grammar cannot be used: {exc.message}",
                                  param="grammar") from None
    return compiled.factory()


def requested(grammar: Any, json_schema: Any) -> bool:
    return json_schema is not None or (grammar is not None and grammar != "")


def user_grammar_factories(model: ModelView, grammar: Any, json_schema: Any
                           ) -> tuple[LogitsProcessorFactory, ...]:
    """The constraint ``grammar``/``json_schema`` ask for (none when both are absent or the
    grammar is ``""``, llama-server's default)."""
    if json_schema is not None:
        return (_schema_factory(model, json_schema),)
    if grammar is None or grammar == "":
        return ()
    if not isinstance(grammar, str):
        raise InvalidRequestError("grammar must be a string.", param="grammar")
    return (_grammar_factory(model, grammar),)


def extra_grammar_factories(model: ModelView, extra: dict[str, Any] | None,
                            other: str | None = None) -> tuple[LogitsProcessorFactory, ...]:
    """``grammar``/``json_schema`` sent as extra fields of an OpenAI-shaped body (llama-server
    accepts its own fields there); ``other`` names a constraint already in force, which they
    cannot be combined with."""
    extra = extra or {}
    grammar, schema = extra.get("grammar"), extra.get("json_schema")
    if not requested(grammar, schema):
        return ()
    if other is not None:
        field = "json_schema" if schema is not None else "grammar"
        raise InvalidRequestError(f"{field} cannot be combined with {other}.", param=field)
    return user_grammar_factories(model, grammar, schema)
