"""What a tool-call format is: the markers around a call, how a finished block parses into
calls, and (for formats that allow it) how a block still being generated streams.

Every format module in this package defines ``FORMAT``, an instance of a ``ToolFormat``
subclass. The stream filter (``chat/stream_filter.py``) only knows this interface: it finds
``start`` in the generated text, collects the block up to ``end`` (``None``: to the end of the
generation), and hands the block's text to ``parse_block``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .head_match import Alt, HeadPattern, JsonName, Lit, Ws
from .head_stream import HeadStream, NoHeadStream, WholeBodyHeadStream

Tools = list[dict[str, Any]]
Spell = Callable[[str], str]


class MalformedCall(ValueError):
    """A block that opened like a tool call but does not parse as one."""


@dataclass(frozen=True)
class RawCall:
    """A call as the model wrote it: the function name and its arguments as JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True)
class StreamHead:
    """How far a block being generated has got: the name once known, and the part of the
    arguments text that is certainly the model's own arguments (``None``: cannot stream)."""

    name: str
    arguments: str | None


class ToolFormat:
    """One wire format for tool calls. Subclasses set the markers and implement parsing."""

    name: str = ""
    start: str = ""
    end: str | None = None
    alt_starts: tuple[str, ...] = ()  # more texts that open a block
    keep_start: bool = False  # the opening text is part of the body (bare JSON formats)

    @property
    def starts(self) -> tuple[str, ...]:
        return (self.start, *self.alt_starts)

    def detect(self, template: str) -> bool:
        """Whether a chat template renders tools in this format."""
        raise NotImplementedError

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        """The calls in one block (the text between ``start`` and ``end``)."""
        raise NotImplementedError

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        """The call in a block still being generated, for formats whose arguments stream: the
        reference for ``head_stream``, read once on a whole (cut or malformed) block."""
        return None

    def head_stream(self, tools: Tools) -> HeadStream:
        """What the stream filter feeds a block to while it grows: ``stream_head`` read
        incrementally. A format that overrides ``stream_head`` overrides this too, or its
        blocks are re-read whole on every token."""
        if type(self).stream_head is ToolFormat.stream_head:
            return NoHeadStream()
        return WholeBodyHeadStream(self, tools)

    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        """A Lark grammar (llguidance) for one forced call, or None if not expressible.
        ``tools`` carry bounded parameters (``chat/forced_bounds``); ``spell`` writes text as
        Lark terminals (added tokens by id, the rest quoted). Pieces: ``grammar.py``."""
        return None


# -- JSON helpers shared by the JSON-bodied formats ------------------------------------------

_DECODER = json.JSONDecoder()


def _skip_ws(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t\r\n":
        pos += 1
    return pos


def object_members(text: str, start: int = 0) -> tuple[dict[str, str], int]:
    """Top-level members of the JSON object at ``start`` as raw value texts (the model's own
    spelling kept), and the index after the object. Raises ``MalformedCall``."""
    pos = _skip_ws(text, start)
    if pos >= len(text) or text[pos] != "{":
        raise MalformedCall("expected a JSON object")
    members: dict[str, str] = {}
    pos = _skip_ws(text, pos + 1)
    if pos < len(text) and text[pos] == "}":
        return members, pos + 1
    try:
        while True:
            key, pos = _DECODER.raw_decode(text, pos)
            pos = _skip_ws(text, pos)
            if not isinstance(key, str) or text[pos] != ":":
                raise MalformedCall("expected a member name")
            value_start = _skip_ws(text, pos + 1)
            _, pos = _DECODER.raw_decode(text, value_start)
            members[key] = text[value_start:pos]
            pos = _skip_ws(text, pos)
            if text[pos] == "}":
                return members, pos + 1
            if text[pos] != ",":
                raise MalformedCall("expected ',' or '}'")
            pos = _skip_ws(text, pos + 1)
    except (ValueError, IndexError) as exc:
        raise MalformedCall(f"invalid JSON: {exc}") from None


def arguments_text(raw: str | None) -> str:
    """An arguments value as JSON text: objects keep their text; a JSON string holding the
    arguments is unwrapped unchanged; absent means no arguments."""
    if raw is None:
        return "{}"
    try:
        value = json.loads(raw)
    except ValueError:
        raise MalformedCall("arguments are not JSON") from None
    if isinstance(value, str):
        return value
    if not isinstance(value, dict):
        raise MalformedCall("arguments are not a JSON object")
    return raw


def name_arguments_call(obj_text: str, arg_keys: tuple[str, ...] = ("arguments", "parameters"),
                        ) -> RawCall:
    """A ``{"name": ..., "arguments": {...}}`` object as a call."""
    members, _ = object_members(obj_text)
    name_raw = members.get("name")
    name = json.loads(name_raw) if name_raw is not None else None
    if not isinstance(name, str) or not name:
        raise MalformedCall("the call has no name")
    raw_args = next((members[k] for k in arg_keys if k in members), None)
    return RawCall(name, arguments_text(raw_args))


def json_value_prefix(text: str) -> tuple[str, bool]:
    """The leading part of ``text`` that belongs to one JSON object or array, and whether it is
    complete. Only containers are tracked (anything else: ``("", False)``)."""
    pos = _skip_ws(text, 0)
    if pos >= len(text) or text[pos] not in "{[":
        return "", False
    depth, in_string, escaped = 0, False, False
    for i in range(pos, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return text[pos : i + 1], True
    return text[pos:], False


_HEAD = re.compile(
    r'\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)+)"\s*,\s*"(?:arguments|parameters)"\s*:\s*'
)


# ``_HEAD`` as ``head_match`` steps, for ``JsonHeadStream``.
JSON_HEAD: HeadPattern = (
    Ws(), Lit("{"), Ws(), Lit('"name"'), Ws(), Lit(":"), Ws(), JsonName(), Ws(), Lit(","), Ws(),
    Alt(('"arguments"', '"parameters"')), Ws(), Lit(":"))


def json_stream_head(body: str) -> StreamHead | None:
    """Streaming for ``{"name": "f", "arguments": {...}}`` written name first."""
    match = _HEAD.match(body)
    if match is None:
        return None
    try:
        name = json.loads(f'"{match.group(1)}"')
    except ValueError:  # an escape JSON does not know: no name to announce
        return None
    rest = body[match.end() :]
    if rest and rest.lstrip() and rest.lstrip()[0] != "{":
        return StreamHead(name, None)  # a string or other value: sent whole at the end
    prefix, _ = json_value_prefix(rest)
    return StreamHead(name, prefix)


# -- schema coercion for formats whose argument values are bare text ------------------------


def tool_parameters(tools: Tools, name: str) -> dict[str, Any]:
    for tool in tools:
        function = tool.get("function") or {}
        if function.get("name") == name:
            params = function.get("parameters") or {}
            props = params.get("properties") if isinstance(params, dict) else None
            return props if isinstance(props, dict) else {}
    return {}


_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False,
             "None": None}


def coerce_value(raw: str, schema: dict[str, Any] | None) -> Any:
    """A string-typed parameter keeps its raw text; other types parse as JSON or loose
    literals, falling back to the text."""
    types = (schema or {}).get("type")
    type_list = types if isinstance(types, list) else [types]
    if "string" in type_list:
        return raw
    text = raw.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    if text in _LITERALS:
        return _LITERALS[text]
    return raw


def coerced_arguments(pairs: list[tuple[str, str]], tools: Tools, name: str) -> str:
    props = tool_parameters(tools, name)
    values = {key: coerce_value(value, props.get(key)) for key, value in pairs}
    return json.dumps(values, ensure_ascii=False)


def list_of_calls(text: str) -> list[RawCall]:
    """One call object or a JSON list of them, each ``{"name", "arguments"|"parameters"}``."""
    try:
        value, end = _DECODER.raw_decode(text.strip())
    except ValueError:
        raise MalformedCall("the calls are not JSON") from None
    stripped = text.strip()
    if isinstance(value, dict):
        return [name_arguments_call(stripped[:end])]
    if not isinstance(value, list) or not value:
        raise MalformedCall("expected a call object or a list of calls")
    calls, pos = [], 1
    for _ in value:
        pos = _skip_ws(stripped, pos)
        members, after = object_members(stripped, pos)
        calls.append(name_arguments_call(stripped[pos:after]))
        pos = _skip_ws(stripped, after) + 1  # past the comma or the closing bracket
    return calls
