"""MiniMax M3: MiniMax M2's XML with every tag namespaced by the prefix ``]<]minimax[>[``
(``<]<]minimax[>[invoke name="f">``); values coerced against the tool schema."""

from __future__ import annotations

from .base import RawCall, Spell, ToolFormat, Tools
from .minimax_m2 import invoke_lark, parse_invokes

NS = "]<]minimax[>["


class MinimaxM3Format(ToolFormat):
    name = "minimax_m3"
    start = f"<{NS}tool_call>"
    end = f"</{NS}tool_call>"

    def detect(self, template: str) -> bool:
        return NS in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        return parse_invokes(body.replace(f"<{NS}", "<").replace(f"</{NS}", "</"), tools)


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return invoke_lark(tools, spell, f"<{NS}", f"</{NS}")


FORMAT = MinimaxM3Format()
