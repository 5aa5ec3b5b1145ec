"""Generic JSON: the answer is ``{"name": "f", "arguments": {...}}`` (or a list of them), for
templates that declare tools without any marker of their own."""

from __future__ import annotations

from .base import (
    JSON_HEAD,
    RawCall,
    Spell,
    StreamHead,
    ToolFormat,
    Tools,
    json_stream_head,
    list_of_calls,
)
from .grammar import json_call_lark
from .head_stream import HeadStream, JsonHeadStream


class GenericJsonFormat(ToolFormat):
    name = "generic_json"
    start = '{"name"'
    alt_starts = ('[{"name"',)
    keep_start = True

    def detect(self, template: str) -> bool:
        return "tools" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        return list_of_calls(body)

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        return json_stream_head(body) if body.startswith("{") else None

    def head_stream(self, tools: Tools) -> HeadStream:
        return JsonHeadStream(JSON_HEAD[1:])  # the block opens with the brace itself


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return json_call_lark(tools, "", "")


FORMAT = GenericJsonFormat()
