"""Kimi K2: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0
<|tool_call_argument_begin|>{json}<|tool_call_end|>…<|tool_calls_section_end|>``."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Spell, ToolFormat, Tools, arguments_text
from .grammar import wrapped_arguments_lark

_CALL = re.compile(r"<\|tool_call_begin\|>\s*(?:functions\.)?([^:<\s]+)(?::\d+)?\s*"
                   r"<\|tool_call_argument_begin\|>(.*?)<\|tool_call_end\|>", re.DOTALL)


class KimiK2Format(ToolFormat):
    name = "kimi_k2"
    start = "<|tool_calls_section_begin|>"
    end = "<|tool_calls_section_end|>"

    def detect(self, template: str) -> bool:
        return "<|tool_calls_section_begin|>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        calls = [RawCall(name, arguments_text(args.strip())) for name, args in _CALL.findall(body)]
        if not calls:
            raise MalformedCall("no complete call in the section")
        return calls


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return wrapped_arguments_lark(
            tools, spell,
            lambda name: f"{self.start}<|tool_call_begin|>functions.{name}:0"
                         "<|tool_call_argument_begin|>",
            f"<|tool_call_end|>{self.end}")


FORMAT = KimiK2Format()
