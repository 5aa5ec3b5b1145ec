"""Meetkai Functionary v3.1: ``<function=NAME>{json}</function>``."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Spell, ToolFormat, Tools, arguments_text
from .grammar import wrapped_arguments_lark

_HEAD = re.compile(r"([^>\s]+)>")


class FunctionaryV31Format(ToolFormat):
    name = "functionary_v31"
    start = "<function="
    end = "</function>"

    def detect(self, template: str) -> bool:
        return "<function=" in template and "<parameter=" not in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        match = _HEAD.match(body)
        if match is None:
            raise MalformedCall("expected <function=NAME>")
        return [RawCall(match.group(1), arguments_text(body[match.end():].strip() or None))]


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return wrapped_arguments_lark(tools, spell, lambda name: f"<function={name}>",
                                      "</function>")


FORMAT = FunctionaryV31Format()
