"""Harmony (GPT-OSS): ``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>
{json}<|call|>``. The block opens at the channel header (or at ``to=functions.`` when the
header came in the prompt), so the header never reaches the content."""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Spell, ToolFormat, Tools, arguments_text
from .grammar import wrapped_arguments_lark

_HEAD = re.compile(r"([A-Za-z0-9_.\-]+)\s*(?:<\|constrain\|>\s*json\s*)?<\|message\|>", re.DOTALL)


class HarmonyFormat(ToolFormat):
    name = "harmony"
    start = "<|channel|>commentary to=functions."
    alt_starts = ("to=functions.",)
    end = "<|call|>"

    def detect(self, template: str) -> bool:
        return "<|channel|>" in template and "to=functions." in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        match = _HEAD.match(body)
        if match is None:
            raise MalformedCall("expected NAME<|message|>")
        return [RawCall(match.group(1), arguments_text(body[match.end():].strip() or None))]


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        # The call ends at <|call|>, an end-of-generation token the grammar leaves to the model.
        return wrapped_arguments_lark(
            tools, spell, lambda name: f"{self.start}{name} <|constrain|>json<|message|>")


FORMAT = HarmonyFormat()
