"""Hermes / Qwen / DeepSeek: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``."""

from __future__ import annotations

from .base import (
    JSON_HEAD,
    MalformedCall,
    RawCall,
    Spell,
    StreamHead,
    ToolFormat,
    Tools,
    json_stream_head,
    name_arguments_call,
)
from .grammar import json_call_lark
from .head_stream import HeadStream, JsonHeadStream


class HermesFormat(ToolFormat):
    name = "hermes"
    start = "<tool_call>"
    end = "</tool_call>"

    def detect(self, template: str) -> bool:
        return "<tool_call>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        text = body.strip()
        if not text:
            raise MalformedCall("empty tool call")
        return [name_arguments_call(text)]

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        return json_stream_head(body)

    def head_stream(self, tools: Tools) -> HeadStream:
        return JsonHeadStream(JSON_HEAD)

    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return json_call_lark(tools, f'{spell(self.start)} "\\n"', f'"\\n" {spell(self.end)}')


FORMAT = HermesFormat()
