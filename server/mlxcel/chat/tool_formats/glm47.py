"""GLM-4.7 (glm4_moe family): ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>…
</tool_call>``; values coerced against the tool schema."""

from __future__ import annotations

from .base import RawCall, Spell, ToolFormat, Tools
from .grammar import keyed_call_lark
from .xml_pairs import name_then_pairs, tagged_pairs


class Glm47Format(ToolFormat):
    name = "glm47"
    start = "<tool_call>"
    end = "</tool_call>"

    def detect(self, template: str) -> bool:
        return "<arg_key>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        pairs = tagged_pairs(body, "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
        return [name_then_pairs(body, "<arg_key>", pairs, tools)]


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return keyed_call_lark(
            tools, spell, opening=lambda name: f"<tool_call>{name}\n",
            key=lambda key: f"<arg_key>{key}</arg_key>\n<arg_value>",
            after_value="</arg_value>\n", closing="</tool_call>")


FORMAT = Glm47Format()
