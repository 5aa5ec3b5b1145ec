"""Lark grammars (llguidance) for one forced call, written in a format's own wire syntax.

A format's ``call_grammar`` assembles its markers (spelled by ``Spell``: an added token as its
id, other text quoted) around the pieces built here:

* ``json_call_lark`` / ``call_schema``: the ``{"name": f, "arguments": {...}}`` object of the
  JSON-wire formats, one ``%json`` over every declared function;
* ``per_tool``: one alternative per function, for formats that write the name outside the
  arguments (``<function=NAME>{...}``, ``call:NAME{k:v}``);
* ``arguments_json``: a function's arguments as one JSON object;
* ``members``: the arguments one by one (tagged-text, Python and Gemma formats), in declared
  order, each required one present, each optional one optional; a value is ``raw_string`` text
  for a string parameter and ``%json`` for anything else (numbers, booleans, objects), which is
  what the formats' parsers coerce back.

Every JSON piece carries the JSON style and, through the tools' bounded parameters
(``chat/forced_bounds``), the bounds that make the call end.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ...structured.json_bounds import JSON_STYLE, types_of
from .base import Spell, Tools

# A string parameter without a length bound (a ``pattern`` or ``format`` one) in a raw-text
# format; the JSON formats leave those to llguidance.
RAW_STRING_CAP = 256


def function_of(tool: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    function = tool.get("function") or {}
    params = function.get("parameters")
    return str(function.get("name", "")), params if isinstance(params, dict) else {
        "type": "object"}


def json_text(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> str:
    """``%json`` of ``schema`` (a root of its own: the style and ``defs`` go on it)."""
    root = {**schema, **({"$defs": defs} if defs else {}), "x-guidance": JSON_STYLE}
    return f"%json {json.dumps(root)}"


def _renamed_refs(node: Any, prefix: str) -> Any:
    if isinstance(node, dict):
        out = {k: _renamed_refs(v, prefix) for k, v in node.items()}
        ref = out.get("$ref")
        if isinstance(ref, str):
            out["$ref"] = re.sub(r"^#/(\$defs|definitions)/", f"#/$defs/{prefix}", ref)
        return out
    if isinstance(node, list):
        return [_renamed_refs(v, prefix) for v in node]
    return node


def hoisted(schema: dict[str, Any], prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``schema`` without its definitions, and the definitions renamed ``prefix + name``, so
    that it can sit inside another schema whose root holds them."""
    renamed = _renamed_refs(schema, prefix)
    defs = {**(renamed.pop("definitions", None) or {}), **(renamed.pop("$defs", None) or {})}
    return renamed, {f"{prefix}{k}": v for k, v in defs.items()}


def call_schema(tools: Tools, arguments_key: str = "arguments",
                name_key: str = "name") -> dict[str, Any]:
    """JSON schema of ``{name_key: f, arguments_key: params(f)}`` over the declared functions,
    the functions' own definitions hoisted to its root."""
    options, defs = [], {}
    for index, tool in enumerate(tools):
        name, params = function_of(tool)
        params, own = hoisted(params, f"f{index}_")
        defs.update(own)
        options.append({
            "type": "object",
            "properties": {name_key: {"const": name}, arguments_key: params},
            "required": [name_key, arguments_key],
            "additionalProperties": False,
        })
    schema: dict[str, Any] = options[0] if len(options) == 1 else {"anyOf": options}
    return {**schema, "$defs": defs} if defs else schema


def json_call_lark(tools: Tools, opening: str, closing: str,
                   arguments_key: str = "arguments", name_key: str = "name") -> str:
    """Lark: ``opening`` + one JSON call object + ``closing`` (Lark expressions)."""
    schema = call_schema(tools, arguments_key, name_key)
    return f"start: {opening} {json_text(schema)} {closing}\n"


def arguments_json(params: dict[str, Any]) -> str:
    return json_text(params)


def per_tool(tools: Tools, render: Callable[[str, dict[str, Any], LarkRules], str]) -> str:
    """Lark whose start is one alternative per function, each ``render(name, params, rules)``."""
    rules = LarkRules()
    options = [render(name, params, rules) for name, params in map(function_of, tools)]
    return rules.grammar(" | ".join(f"({option})" for option in options))


class LarkRules:
    """Named helper rules of one grammar (so that shared suffixes are written once)."""

    def __init__(self) -> None:
        self._rules: list[str] = []

    def add(self, body: str) -> str:
        name = f"r{len(self._rules)}"
        self._rules.append(f"{name}: {body}")
        return name

    def grammar(self, start: str) -> str:
        return "\n".join([f"start: {start}", *self._rules]) + "\n"


def members(rules: LarkRules, items: list[tuple[str, bool]], separator: str | None) -> str:
    """Lark for ``items`` (expression, required) in order, optional ones skippable, joined by
    ``separator`` (a Lark expression, or None)."""
    sep = f"{separator} " if separator else ""
    first = after = '""'  # what may follow: before any member / after one
    for expr, required in reversed(items):
        later_after = f"{sep}{expr} {after}"
        later_first = f"{expr} {after}"
        if not required:
            later_after = f"{later_after} | {after}"
            later_first = f"{later_first} | {first}"
        after, first = rules.add(later_after), rules.add(later_first)
    return first


def properties_of(params: dict[str, Any]) -> list[tuple[str, dict[str, Any], bool]]:
    """(key, schema, required) of a function's declared arguments, in declared order."""
    properties = params.get("properties")
    required = set(params.get("required") or [])
    if not isinstance(properties, dict):
        return []
    return [(key, sub if isinstance(sub, dict) else {}, key in required)
            for key, sub in properties.items()]


def is_string_value(schema: dict[str, Any]) -> bool:
    """A parameter whose raw text is kept as a string by the formats' coercion."""
    return "string" in types_of(schema) or (
        not types_of(schema) and all(isinstance(v, str) for v in schema.get("enum") or [None]))


def raw_string(schema: dict[str, Any], excluded: str = "<") -> str:
    """A string value written bare (no quotes): an ``enum``/``const`` choice, else up to
    ``maxLength`` characters other than ``excluded`` (which would open the next tag)."""
    choices = schema.get("enum") if "const" not in schema else [schema["const"]]
    if choices and all(isinstance(c, str) for c in choices):
        return "(" + " | ".join(json.dumps(c) for c in choices) + ")"
    low, high = schema.get("minLength", 0), schema.get("maxLength", RAW_STRING_CAP)
    low = low if isinstance(low, int) and low >= 0 else 0
    high = max(low, high if isinstance(high, int) else RAW_STRING_CAP)
    chars = "".join(f"\\x{ord(c):02x}" for c in excluded)
    return f"/[^{chars}]{{{low},{high}}}/"


def value_expr(schema: dict[str, Any], defs: dict[str, Any] | None,
               string: Callable[[dict[str, Any]], str]) -> str:
    """A parameter value: ``string(schema)`` for a string, else its JSON text."""
    if is_string_value(schema):
        return string(schema)
    return json_text(schema, defs)


ValueLark = Callable[[dict[str, Any], "dict[str, Any] | None", str], str]


def bare_value(schema: dict[str, Any], defs: dict[str, Any] | None, excluded: str) -> str:
    """A value in a tagged-text format: strings bare (without the ``excluded`` characters),
    the rest JSON."""
    return value_expr(schema, defs, lambda sub: raw_string(sub, excluded))


def python_value(schema: dict[str, Any], defs: dict[str, Any] | None, excluded: str) -> str:
    """A Python literal: strings quoted (JSON's spelling is Python's), ``True``/``False``,
    ``None``, numbers and containers as JSON."""
    kinds = types_of(schema)
    options = []
    if "string" in kinds:
        options.append(json_text({**schema, "type": "string"}, defs))
    if "boolean" in kinds:
        options.append('"True" | "False"')
    if "null" in kinds:
        options.append('"None"')
    rest = kinds - {"string", "boolean", "null"}
    if rest or not kinds:
        options.append(json_text({**schema, "type": sorted(rest)} if rest else schema, defs))
    return "(" + " | ".join(options) + ")"


def keyed_call_lark(
    tools: Tools,
    spell: Spell,
    *,
    opening: Callable[[str], str],
    key: Callable[[str], str],
    after_value: str | Callable[[str], str],
    closing: str,
    separator: str | None = None,
    value: ValueLark = bare_value,
) -> str:
    """Lark for ``opening(NAME)`` then each argument as ``key(K) VALUE after_value`` (joined by
    ``separator``) then ``closing``: the formats that write arguments one by one.
    ``after_value`` is one text, or ``after_value(K)`` where the closing tag names the key.

    llguidance ends a text lexeme only where it cannot go on, so a bare string never holds
    ``<`` (which opens the next tag) nor the first character of ``after_value``."""
    after = after_value if callable(after_value) else lambda _: after_value
    first = after("")[:1]
    excluded = "<" + (first if first not in ("", "<") else "")

    def render(name: str, params: dict[str, Any], rules: LarkRules) -> str:
        defs = params.get("$defs")
        items = [(f"{spell(key(k))} {value(sub, defs, excluded)} {spell(after(k))}",
                  required)
                 for k, sub, required in properties_of(params)]
        body = members(rules, items, spell(separator) if separator else None)
        return f"{spell(opening(name))} {body} {spell(closing)}"

    return per_tool(tools, render)


def wrapped_arguments_lark(tools: Tools, spell: Spell, opening: Callable[[str], str],
                           closing: str = "") -> str:
    """Lark for ``opening(NAME)`` + the arguments as one JSON object + ``closing``."""
    return per_tool(tools, lambda name, params, _: " ".join(
        part for part in (spell(opening(name)), arguments_json(params),
                          spell(closing) if closing else "") if part))


def gemma_call_lark(tools: Tools, spell: Spell, start: str, end: str, quote: str) -> str:
    """``start`` call:NAME{key:QUOTE text QUOTE,key:value} ``end`` (Gemma 4, FunctionGemma)."""

    def quoted(schema: dict[str, Any]) -> str:
        return f"{spell(quote)} {raw_string(schema)} {spell(quote)}"

    return keyed_call_lark(
        tools, spell, opening=lambda name: f"{start}call:{name}{{", key=lambda key: f"{key}:",
        after_value="", closing=f"}}{end}", separator=",",
        value=lambda schema, defs, _: value_expr(schema, defs, quoted))
