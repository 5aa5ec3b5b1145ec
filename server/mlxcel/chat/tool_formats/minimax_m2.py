"""MiniMax M2: ``<minimax:tool_call><invoke name="f"><parameter name="k">v</parameter>
</invoke>…</minimax:tool_call>``; values coerced against the tool schema."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Spell, ToolFormat, Tools, coerced_arguments
from .grammar import keyed_call_lark
from .xml_pairs import strip_newline_edges

_INVOKE = re.compile(r'<invoke name="([^"]+)">(.*?)</invoke>', re.DOTALL)
_PARAM = re.compile(r'<parameter name="([^"]+)">(.*?)</parameter>', re.DOTALL)


def parse_invokes(body: str, tools: Tools) -> list[RawCall]:
    calls = []
    for name, inner in _INVOKE.findall(body):
        pairs = [(k, strip_newline_edges(v)) for k, v in _PARAM.findall(inner)]
        calls.append(RawCall(name, coerced_arguments(pairs, tools, name)))
    if not calls:
        raise MalformedCall("no <invoke name=...> in the tool call")
    return calls


def invoke_lark(tools: Tools, spell: Spell) -> str:
    """The forced-call grammar of the MiniMax M2 XML."""
    return keyed_call_lark(
        tools, spell,
        opening=lambda name: f'<minimax:tool_call>\n<invoke name="{name}">\n',
        key=lambda key: f'<parameter name="{key}">',
        after_value="</parameter>\n",
        closing="</invoke>\n</minimax:tool_call>")


class MinimaxM2Format(ToolFormat):
    name = "minimax_m2"
    start = "<minimax:tool_call>"
    end = "</minimax:tool_call>"

    def detect(self, template: str) -> bool:
        return "<minimax:tool_call>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        return parse_invokes(body, tools)


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return invoke_lark(tools, spell)


FORMAT = MinimaxM2Format()
