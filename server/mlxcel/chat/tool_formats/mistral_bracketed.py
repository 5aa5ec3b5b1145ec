"""Mistral bracketed (Ministral 2410+, Mistral Small 3, Magistral, Devstral):
``[TOOL_CALLS]NAME[ARGS]{json}``, repeated for parallel calls."""

from __future__ import annotations

import re

from .base import (
    MalformedCall,
    RawCall,
    Spell,
    StreamHead,
    ToolFormat,
    Tools,
    arguments_text,
    json_value_prefix,
)
from .grammar import wrapped_arguments_lark
from .head_match import Lit, Run, Ws
from .head_stream import HeadStream, JsonHeadStream

_HEAD = re.compile(r"\s*([A-Za-z0-9_.\-]+)\[ARGS\]")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


class MistralBracketedFormat(ToolFormat):
    name = "mistral_bracketed"
    start = "[TOOL_CALLS]"

    def detect(self, template: str) -> bool:
        return "[TOOL_CALLS]" in template and "[ARGS]" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        calls = []
        for part in body.split(self.start):
            if not part.strip():
                continue
            match = _HEAD.match(part)
            if match is None:
                raise MalformedCall("expected NAME[ARGS]")
            args, complete = json_value_prefix(part[match.end():])
            if not complete:
                raise MalformedCall("the arguments are not complete JSON")
            calls.append(RawCall(match.group(1), arguments_text(args)))
        if not calls:
            raise MalformedCall("no call after [TOOL_CALLS]")
        return calls

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        if self.start in body:
            return None  # a second call: sent at the end
        match = _HEAD.match(body)
        if match is None:
            return None
        return StreamHead(match.group(1), json_value_prefix(body[match.end():])[0])

    def head_stream(self, tools: Tools) -> HeadStream:
        return JsonHeadStream((Ws(), Run(_NAME_CHARS.__contains__), Lit("[ARGS]")),
                              skip=" \t\r\n", opens="{[", abandon=self.start)


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return wrapped_arguments_lark(tools, spell, lambda name: f"[TOOL_CALLS]{name}[ARGS]")


FORMAT = MistralBracketedFormat()
