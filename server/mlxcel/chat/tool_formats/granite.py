"""IBM Granite 3.3: ``<tool_call>[{"name": "f", "arguments": {...}}]`` to the end of the
generation (optionally wrapped in ``<response>``)."""

from __future__ import annotations

from .base import MalformedCall, RawCall, Spell, ToolFormat, Tools, list_of_calls
from .grammar import json_call_lark


class GraniteFormat(ToolFormat):
    name = "granite"
    start = "<tool_call>"

    def detect(self, template: str) -> bool:
        return "<tool_call>" in template and "<|start_of_role|>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        text = body.replace("</tool_call>", "").replace("</response>", "").strip()
        if not text:
            raise MalformedCall("empty tool call")
        return list_of_calls(text)


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return json_call_lark(tools, f'{spell(self.start)} "["', '"]"')


FORMAT = GraniteFormat()
