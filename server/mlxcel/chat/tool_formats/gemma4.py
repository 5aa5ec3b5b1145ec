"""Google Gemma 4: ``<|tool_call>call:NAME{key:<|"|>text<|"|>,n:2}<tool_call|>``."""

from __future__ import annotations

from .base import RawCall, Spell, ToolFormat, Tools
from .grammar import gemma_call_lark
from .loose_call import parse_loose_call


class Gemma4Format(ToolFormat):
    name = "gemma4"
    start = "<|tool_call>"
    end = "<tool_call|>"

    def detect(self, template: str) -> bool:
        return "<|tool_call>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        return [parse_loose_call(body, '<|"|>', tools)]


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return gemma_call_lark(tools, spell, self.start, self.end, '<|"|>')


FORMAT = Gemma4Format()
