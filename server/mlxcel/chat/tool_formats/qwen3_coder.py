"""Qwen3-Coder (and Qwen3.5/3.6 sharing its template): XML inside ``<tool_call>``::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>
"""

from __future__ import annotations

import json
import re
from typing import Any

from .base import (
    MalformedCall,
    RawCall,
    Spell,
    StreamHead,
    ToolFormat,
    Tools,
    coerce_value,
    coerced_arguments,
    tool_parameters,
)
from .grammar import keyed_call_lark
from .head_match import HeadMatcher, Lit, Run, Ws
from .head_stream import HeadGrowth, HeadStream
from .xml_pairs import strip_newline_edges

_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)",
                        re.DOTALL)


class Qwen3CoderFormat(ToolFormat):
    name = "qwen3_coder"
    start = "<tool_call>"
    end = "</tool_call>"

    def detect(self, template: str) -> bool:
        return "<function=" in template and "<parameter=" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        calls = []
        for name, inner in _FUNCTION.findall(body):
            pairs = [(k.strip(), strip_newline_edges(v)) for k, v in _PARAMETER.findall(inner)]
            calls.append(RawCall(name.strip(), coerced_arguments(pairs, tools, name.strip())))
        if not calls:
            raise MalformedCall("no <function=...> in the tool call")
        return calls

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        """Each finished ``<parameter>`` streams as one member of the JSON object the final
        parse builds (``json.dumps`` spelling), so the fragments add up to it exactly."""
        match = re.match(r"\s*<function=([^>\n]+)>", body)
        if match is None:
            return None
        name = match.group(1).strip()
        closed = body[match.end():].rsplit("</parameter>", 1)[0] if "</parameter>" in body else ""
        pairs = [(k.strip(), strip_newline_edges(v)) for k, v in _PARAMETER.findall(closed)]
        if not pairs:
            return StreamHead(name, "")
        full = coerced_arguments(pairs, tools, name)
        return StreamHead(name, full[:-1])  # everything but the closing brace


    def head_stream(self, tools: Tools) -> HeadStream:
        return ParameterStream(tools)

    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return keyed_call_lark(
            tools, spell, opening=lambda name: f"<tool_call>\n<function={name}>\n",
            key=lambda key: f"<parameter={key}>\n", after_value="\n</parameter>\n",
            closing="</function>\n</tool_call>")


_CLOSE = "</parameter>"


class ParameterStream(HeadStream):
    """``stream_head`` read incrementally. Only a new ``</parameter>`` changes the arguments;
    then the parameters after the last one known for sure are parsed again (the last one before
    the newest close may still grow), never the whole block."""

    def __init__(self, tools: Tools) -> None:
        self._head = HeadMatcher((Ws(), Lit("<function="), Run(lambda c: c not in ">\n"),
                                  Lit(">")))
        self._tools = tools
        self._props: dict[str, Any] = {}
        self._name: str | None = None
        self._tail = ""  # the last characters read, for a close cut across pieces
        self._open: list[str] = []  # the text after the last parameter known for sure
        self._open_len = 0
        self._pairs: list[tuple[str, str]] = []  # the parameters known for sure
        self._members: list[str] = []  # their JSON members, as ``json.dumps`` spells them
        self._sent_members: list[str] | None = []  # None: sent text no longer whole members
        self._sent: list[str] = []

    def feed(self, text: str) -> HeadGrowth | None:
        if self._name is None:
            at = self._head.feed(text)
            if at is None:
                return None
            self._name = self._head.captures[-1].strip()
            self._props = tool_parameters(self._tools, self._name)
            text = text[at:]
        window = self._tail + text
        close = window.rfind(_CLOSE)
        self._tail = window[-(len(_CLOSE) - 1):]
        before = self._open_len - (len(window) - len(text))
        self._open.append(text)
        self._open_len += len(text)
        if close < 0:
            return HeadGrowth(self._name, "")
        return HeadGrowth(self._name, self._grown(before + close))

    def _grown(self, closed_at: int) -> str:
        """The arguments added now that the parameters are closed up to ``closed_at``."""
        text = "".join(self._open)
        found = list(_PARAMETER.finditer(text, 0, closed_at))
        for match in found[:-1]:  # a parameter followed by another one no longer changes
            self._add_pair(match, self._members, self._pairs)
        if len(found) > 1:
            text = text[found[-2].end():]
        self._open, self._open_len = [text], len(text)
        members, pairs = list(self._members), list(self._pairs)
        if found:
            self._add_pair(found[-1], members, pairs)
        return self._fragment(members, pairs)

    def _add_pair(self, match: re.Match[str], members: list[str],
                  pairs: list[tuple[str, str]]) -> None:
        key, value = match.group(1).strip(), strip_newline_edges(match.group(2))
        pairs.append((key, value))
        member = json.dumps({key: coerce_value(value, self._props.get(key))},
                            ensure_ascii=False)
        members.append(member[1:-1])

    def _fragment(self, members: list[str], pairs: list[tuple[str, str]]) -> str:
        if not pairs:
            return ""
        sent = self._sent_members
        unique = len({key for key, _ in pairs}) == len(pairs)
        if unique and sent is not None and members[: len(sent)] == sent:
            self._sent_members = members
            if len(members) == len(sent):
                return ""
            fragment = ("{" if not sent else ", ") + ", ".join(members[len(sent):])
        else:  # a key given twice, or a parameter parsed differently: compare the texts
            assert self._name is not None
            full = coerced_arguments(pairs, self._tools, self._name)[:-1]
            before = "".join(self._sent)
            if not full.startswith(before) or len(full) == len(before):
                return ""
            fragment = full[len(before):]
            self._sent_members = members if unique else None
        self._sent.append(fragment)
        return fragment


FORMAT = Qwen3CoderFormat()
