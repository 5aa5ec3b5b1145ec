"""A tool call's arguments as Anthropic's ``input`` object, whatever the model produced."""

from __future__ import annotations

import pytest

from mlxcel.families.anthropic.messages_wire import tool_input


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [('{"city": "Paris"}', {"city": "Paris"}), ("", {}), ('{"city": "Par', {}),
     ("[1, 2]", {}), ("not json", {})],
    ids=["object", "empty", "cut_off_by_max_tokens", "array", "text"],
)
def test_tool_input_is_always_an_object(arguments: str, expected: dict[str, str]) -> None:
    assert tool_input(arguments) == expected
