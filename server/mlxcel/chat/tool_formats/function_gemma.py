"""Function-calling Gemma: ``<start_function_call>call:NAME{key:<escape>text<escape>}
<end_function_call>``."""

from __future__ import annotations

from .base import RawCall, Spell, ToolFormat, Tools
from .grammar import gemma_call_lark
from .loose_call import parse_loose_call


class FunctionGemmaFormat(ToolFormat):
    name = "function_gemma"
    start = "<start_function_call>"
    end = "<end_function_call>"

    def detect(self, template: str) -> bool:
        return "<start_function_call>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        return [parse_loose_call(body, "<escape>", tools)]


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return gemma_call_lark(tools, spell, self.start, self.end, "<escape>")


FORMAT = FunctionGemmaFormat()
