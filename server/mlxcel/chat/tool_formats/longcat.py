"""LongCat-Flash: ``<longcat_tool_call>NAME<longcat_arg_key>K</longcat_arg_key>
<longcat_arg_value>V</longcat_arg_value>…</longcat_tool_call>``; values coerced."""

from __future__ import annotations

from .base import RawCall, Spell, ToolFormat, Tools
from .grammar import keyed_call_lark
from .xml_pairs import name_then_pairs, tagged_pairs


class LongcatFormat(ToolFormat):
    name = "longcat"
    start = "<longcat_tool_call>"
    end = "</longcat_tool_call>"

    def detect(self, template: str) -> bool:
        return "longcat_tool_call" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        pairs = tagged_pairs(body, "<longcat_arg_key>", "</longcat_arg_key>",
                             "<longcat_arg_value>", "</longcat_arg_value>")
        return [name_then_pairs(body, "<longcat_arg_key>", pairs, tools)]


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return keyed_call_lark(
            tools, spell, opening=lambda name: f"<longcat_tool_call>{name}\n",
            key=lambda key: f"<longcat_arg_key>{key}</longcat_arg_key>\n<longcat_arg_value>",
            after_value="</longcat_arg_value>\n", closing="</longcat_tool_call>")


FORMAT = LongcatFormat()
