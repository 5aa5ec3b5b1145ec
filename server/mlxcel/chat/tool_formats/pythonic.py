"""Pythonic calls: ``[get_weather(city="Paris", days=2)]`` inside ``<|tool_call_start|>`` /
``<|tool_call_end|>`` (Llama-family pythonic templates, some Nemotron)."""

from __future__ import annotations

import ast
import json

from .base import MalformedCall, RawCall, Spell, ToolFormat, Tools
from .grammar import keyed_call_lark, python_value


def _call_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_call_name(node.value)}.{node.attr}"
    raise MalformedCall("a call target is not a name")


def parse_pythonic(text: str) -> list[RawCall]:
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError:
        raise MalformedCall("not a Python call list") from None
    body = tree.body
    nodes = body.elts if isinstance(body, ast.List) else [body]
    calls = []
    for node in nodes:
        if not isinstance(node, ast.Call) or node.args:
            raise MalformedCall("expected keyword-only calls")
        try:
            values = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        except ValueError:
            raise MalformedCall("an argument is not a literal") from None
        calls.append(RawCall(_call_name(node.func), json.dumps(values, ensure_ascii=False)))
    if not calls:
        raise MalformedCall("no call")
    return calls


class PythonicFormat(ToolFormat):
    name = "pythonic"
    start = "<|tool_call_start|>"
    end = "<|tool_call_end|>"

    def detect(self, template: str) -> bool:
        return "<|tool_call_start|>" in template

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        return parse_pythonic(body)


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return keyed_call_lark(
            tools, spell, opening=lambda name: f"{self.start}[{name}(", key=lambda key: f"{key}=",
            after_value="", closing=f")]{self.end}", separator=", ", value=python_value)


FORMAT = PythonicFormat()
