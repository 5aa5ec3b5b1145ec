"""chat.tools.choice_forced's judgment on answers shaped like the peers': a forced call the
server did not make is IGNORED (mlx-lm accepts tool_choice and ignores it), whatever markup the
unconstrained model left in the content; a call cut by max_tokens decides nothing (llama-server's
forced call on the fixture ran to finish_reason length)."""

from __future__ import annotations

import json

import pytest

from mlxcel_conformance.checks.chat_semantics import judge_forced_call
from mlxcel_conformance.errors import ConformanceFailure

MALFORMED = '{"name": "get_time", "get_time", "arguments": "Asia/Tokyo"}}\n</tool_call>'
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}


def test_no_call_with_leftover_markup_is_an_ignored_tool_choice() -> None:
    with pytest.raises(ConformanceFailure) as info:
        judge_forced_call("named", [], "stop", MALFORMED)
    assert info.value.check == "tool_call_declared"
    assert info.value.message.startswith("IGNORED: tool_choice named")
    assert "`tool_choice`" in info.value.evidence["defect"]


def test_a_forced_call_cut_by_max_tokens_is_inconclusive() -> None:
    with pytest.raises(pytest.skip.Exception, match="INCONCLUSIVE"):
        judge_forced_call("required", [], "length", MALFORMED)


def test_markup_beside_a_parsed_call_is_still_a_leak() -> None:
    with pytest.raises(ConformanceFailure) as info:
        judge_forced_call("required", [CALL], "tool_calls", "</tool_call>")
    assert info.value.check == "tool_markup_hidden"
    judge_forced_call("required", [CALL], "tool_calls", None)  # a clean call passes
