"""The fuzzer's own body rules (``checks/fuzzing.py``) take any JSON where the spec allows it:
`nox -s fuzz`'s later passes (new seeds) generated a number as a tool choice's ``function``,
and the rule raised in the fuzzer, an ERROR that no server caused."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.fuzzing import _declared_choice


@pytest.mark.parametrize("function", [1.5, "f", None, [], {"name": 3}])
def test_a_tool_choice_of_any_shape_is_left_to_the_server(function: Any) -> None:
    body = {"messages": [], "tool_choice": {"type": "function", "function": function},
            "tools": [{"type": "function", "function": 2.5}]}
    _declared_choice(body)
    assert body["tool_choice"] == {"type": "function", "function": function}
    assert body["tools"] == [{"type": "function", "function": 2.5}]


def test_a_named_choice_is_declared() -> None:
    body = {"tool_choice": {"type": "function", "function": {"name": "f"}},
            "tools": [{"type": "function", "function": 2.5}]}
    _declared_choice(body)
    assert body["tools"][-1] == {"type": "function", "function": {"name": "f"}}


def test_a_server_tools_name_does_not_declare_a_messages_choice() -> None:
    """`nox -s fuzz` generated ``tool_choice: {"type": "tool", "name": ""}`` beside a server
    tool named ``""``; the spec's choice names a client tool, so the rule declares one."""
    body = {"tool_choice": {"type": "tool", "name": ""}, "tools": [{"type": "", "name": ""}]}
    _declared_choice(body)
    assert body["tool_choice"]["name"] != ""
    client = body["tools"][-1]
    assert client["name"] == body["tool_choice"]["name"] and "input_schema" in client


def test_a_declared_client_tool_is_left_as_chosen() -> None:
    body = {"tool_choice": {"type": "tool", "name": "f"},
            "tools": [{"name": "f", "input_schema": {"type": "object"}}]}
    _declared_choice(body)
    assert body["tools"] == [{"name": "f", "input_schema": {"type": "object"}}]
