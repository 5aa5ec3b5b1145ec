"""Mistral Nemo / Ministral: ``[TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]`` to the end
of the generation."""

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
    list_of_calls,
)
from .grammar import json_call_lark
from .head_match import Lit, Ws
from .head_stream import HeadStream, JsonHeadStream


class MistralNemoFormat(ToolFormat):
    name = "mistral_nemo"
    start = "[TOOL_CALLS]"

    def detect(self, template: str) -> bool:
        return "[TOOL_CALLS]" in template and "[ARGS]" not in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        text = body.strip()
        if not text.startswith(("[", "{")):
            raise MalformedCall("[TOOL_CALLS] is not followed by JSON")
        return list_of_calls(text)

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        stripped = body.lstrip()
        return json_stream_head(stripped[1:]) if stripped.startswith("[") else None

    def head_stream(self, tools: Tools) -> HeadStream:
        return JsonHeadStream((Ws(), Lit("["), *JSON_HEAD))

    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return json_call_lark(tools, f'{spell(self.start)} "["', '"]"')


FORMAT = MistralNemoFormat()
