"""Llama 3.x JSON tool calls: ``{"name": "f", "parameters": {...}}`` as the whole answer, or after
``<|python_tag|>``; the model ends the turn with ``<|eom_id|>``/``<|eot_id|>``."""

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
from .head_match import Opt
from .head_stream import HeadStream, JsonHeadStream


class Llama3Format(ToolFormat):
    name = "llama3"
    start = "<|python_tag|>"
    alt_starts = ('{"name"',)
    keep_start = True

    def detect(self, template: str) -> bool:
        return "<|python_tag|>" in template or ("<|eot_id|>" in template and
                                                 '"parameters"' in template)

    def _body(self, body: str) -> str:
        return body.removeprefix(self.start).strip()

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        text = self._body(body)
        if not text.startswith(("{", "[")):
            raise MalformedCall("<|python_tag|> code is not a JSON call")
        calls = []
        for part in text.split(";"):  # Llama 3.2 separates parallel calls with ';'
            if part.strip():
                calls.extend(list_of_calls(part))
        return calls

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        return json_stream_head(self._body(body))

    def head_stream(self, tools: Tools) -> HeadStream:
        # ``_body`` strips the block: trailing whitespace waits for what follows it
        return JsonHeadStream((Opt(self.start), *JSON_HEAD), hold_space=True)

    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return json_call_lark(tools, spell(self.start), "", arguments_key="parameters")


FORMAT = Llama3Format()
