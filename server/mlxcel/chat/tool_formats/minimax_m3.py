"""MiniMax M3: every tag of the call is opened by the namespace token ``]<]minimax[>[`` (one
token of the real vocabulary) and each argument is an element named after its key::

    ]<]minimax[>[<tool_call>
    ]<]minimax[>[<invoke name="f">]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[</invoke>
    ]<]minimax[>[</tool_call>

Values are coerced against the tool schema (strings bare, anything else as JSON text); the
model may put whitespace between the namespace token and its tag."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Spell, ToolFormat, Tools, coerced_arguments
from .grammar import keyed_call_lark
from .xml_pairs import strip_newline_edges

NS = "]<]minimax[>["
_NS = re.escape(NS)
_SPACED_NS = re.compile(_NS + r"[ \t\r\n]+(?=<)")
_INVOKE = re.compile(_NS + r'<invoke name="([^"]+)">(.*?)' + _NS + r"</invoke>", re.DOTALL)
_PARAM = re.compile(_NS + r'<([^\s<>/"]+)>(.*?)' + _NS + r"</\1>", re.DOTALL)


def parse_namespaced_invokes(body: str, tools: Tools) -> list[RawCall]:
    body = _SPACED_NS.sub(NS, body)
    calls = []
    for name, inner in _INVOKE.findall(body):
        pairs = [(k, strip_newline_edges(v)) for k, v in _PARAM.findall(inner)]
        calls.append(RawCall(name, coerced_arguments(pairs, tools, name)))
    if not calls:
        raise MalformedCall(f'no {NS}<invoke name=...> in the tool call')
    return calls


class MinimaxM3Format(ToolFormat):
    name = "minimax_m3"
    start = f"{NS}<tool_call>"
    end = f"{NS}</tool_call>"

    def detect(self, template: str) -> bool:
        return NS in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        return parse_namespaced_invokes(body, tools)

    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return keyed_call_lark(
            tools, spell,
            opening=lambda name: f'{NS}<tool_call>\n{NS}<invoke name="{name}">',
            key=lambda key: f"{NS}<{key}>",
            after_value=lambda key: f"{NS}</{key}>",
            closing=f"{NS}</invoke>\n{NS}</tool_call>")


FORMAT = MinimaxM3Format()
