"""Meetkai Functionary v3.1: ``<function=NAME>{json}</function>``."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, ToolFormat, Tools, arguments_text

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


FORMAT = FunctionaryV31Format()
