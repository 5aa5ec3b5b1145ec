"""Meetkai Functionary v3.2: ``>>>NAME\\n{json}`` sections to the end of the generation; the
pseudo-function ``all`` carries plain text."""

from __future__ import annotations

from .base import (
    MalformedCall,
    RawCall,
    Spell,
    ToolFormat,
    Tools,
    arguments_text,
    json_value_prefix,
)
from .grammar import wrapped_arguments_lark


class FunctionaryV32Format(ToolFormat):
    name = "functionary_v32"
    start = ">>>"

    def detect(self, template: str) -> bool:
        return ">>>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        calls = []
        for section in body.split(self.start):
            name, _, rest = section.partition("\n")
            name = name.strip()
            if not name or name == "all":
                continue
            args, complete = json_value_prefix(rest)
            if not complete:
                raise MalformedCall(f"the arguments of {name} are not complete JSON")
            calls.append(RawCall(name, arguments_text(args)))
        if not calls:
            raise MalformedCall("no call after >>>")
        return calls


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return wrapped_arguments_lark(tools, spell, lambda name: f">>>{name}\n")


FORMAT = FunctionaryV32Format()
