"""Cohere Command R: ``Action: NAME`` then ``Action Input: {json}``, or the JSON action list
(``Action: ```json [{"tool_name": ..., "parameters": {...}}]````)."""

from __future__ import annotations

import json
import re

from .base import (
    MalformedCall,
    RawCall,
    Spell,
    ToolFormat,
    Tools,
    arguments_text,
    json_value_prefix,
)
from .grammar import json_call_lark

_SINGLE = re.compile(r"\s*([A-Za-z0-9_.\-]+)\s*\n\s*Action Input:\s*", re.DOTALL)


class CommandRFormat(ToolFormat):
    name = "command_r"
    start = "Action:"

    def detect(self, template: str) -> bool:
        return "Action:" in template and ("Action Input" in template or "tool_name" in template)

    def parse_block(self, body: str, tools: Tools) -> list[RawCall]:
        single = _SINGLE.match(body)
        if single is not None:
            args, complete = json_value_prefix(body[single.end():])
            if not complete:
                raise MalformedCall("Action Input is not complete JSON")
            return [RawCall(single.group(1), arguments_text(args))]
        text = body.strip().removeprefix("```json").removesuffix("```").strip()
        args, complete = json_value_prefix(text)
        if not complete:
            raise MalformedCall("the action list is not complete JSON")
        actions = json.loads(args)
        calls = []
        for action in actions if isinstance(actions, list) else [actions]:
            name = action.get("tool_name") if isinstance(action, dict) else None
            if not isinstance(name, str):
                raise MalformedCall("an action has no tool_name")
            calls.append(RawCall(name, json.dumps(action.get("parameters") or {},
                                                  ensure_ascii=False)))
        return calls


    def call_grammar(self, tools: Tools, spell: Spell) -> str | None:
        return json_call_lark(tools, spell("Action: ```json\n["), spell("]\n```"),
                              arguments_key="parameters", name_key="tool_name")


FORMAT = CommandRFormat()
