"""Qwen3-Coder (and Qwen3.5/3.6 sharing its template): XML inside ``<tool_call>``::

    <tool_call>
    <function=get_weather>
    <parameter=city>
    Paris
    </parameter>
    </function>
    </tool_call>
"""

from __future__ import annotations

import re

from .base import MalformedCall, RawCall, Spell, StreamHead, ToolFormat, Tools, coerced_arguments
from .grammar import keyed_call_lark
from .xml_pairs import strip_newline_edges

_FUNCTION = re.compile(r"<function=([^>\n]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\n]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)",
                        re.DOTALL)


class Qwen3CoderFormat(ToolFormat):
    name = "qwen3_coder"
    start = "<tool_call>"
    end = "</tool_call>"

    def detect(self, template: str) -> bool:
        return "<function=" in template and "<parameter=" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        calls = []
        for name, inner in _FUNCTION.findall(body):
            pairs = [(k.strip(), strip_newline_edges(v)) for k, v in _PARAMETER.findall(inner)]
            calls.append(RawCall(name.strip(), coerced_arguments(pairs, tools, name.strip())))
        if not calls:
            raise MalformedCall("no <function=...> in the tool call")
        return calls

    def stream_head(self, body: str, tools: Tools) -> StreamHead | None:
        """Each finished ``<parameter>`` streams as one member of the JSON object the final
        parse builds (``json.dumps`` spelling), so the fragments add up to it exactly."""
        match = re.match(r"\s*<function=([^>\n]+)>", body)
        if match is None:
            return None
        name = match.group(1).strip()
        closed = body[match.end():].rsplit("</parameter>", 1)[0] if "</parameter>" in body else ""
        pairs = [(k.strip(), strip_newline_edges(v)) for k, v in _PARAMETER.findall(closed)]
        if not pairs:
            return StreamHead(name, "")
        full = coerced_arguments(pairs, tools, name)
        return StreamHead(name, full[:-1])  # everything but the closing brace


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return keyed_call_lark(
            tools, spell, opening=lambda name: f"<tool_call>\n<function={name}>\n",
            key=lambda key: f"<parameter={key}>\n", after_value="\n</parameter>\n",
            closing="</function>\n</tool_call>")


FORMAT = Qwen3CoderFormat()
