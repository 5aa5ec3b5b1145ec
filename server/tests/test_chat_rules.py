"""The chat rules that need no model: reasoning split, template kwargs precedence and merge,
tool_choice validation and instruction placement, the rolling checkpoint, schema limits."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel.chat.reasoning import THINK, prompt_opens_reasoning
from mlxcel.chat.stream_filter import ChatOutputParser, ReasoningPiece
from mlxcel.chat.template_kwargs import merged_kwargs, parse_server_kwargs, request_kwargs
from mlxcel.chat.thinking import apply_rolling_checkpoint
from mlxcel.chat.tool_choice import place_instruction, plan_tools
from mlxcel.errors import InvalidRequestError
from mlxcel.structured.limits import check_schema_limits

THOUGHT = "<think>\n2 plus 2 equals 4.\n</think>\n\nThe answer is 4."


@pytest.mark.parametrize("step", [1, 2, 4, 100])
def test_reasoning_split_any_chunking(step: int) -> None:
    parser = ChatOutputParser(reasoning=THINK)
    pieces = []
    for i in range(0, len(THOUGHT), step):
        pieces += parser.feed(THOUGHT[i:i + step])
    pieces += parser.finish()
    assert parser.reasoning == "2 plus 2 equals 4."
    assert parser.content == "The answer is 4."
    assert "".join(p.text for p in pieces if isinstance(p, ReasoningPiece)) == parser.reasoning


def test_reasoning_opened_by_prompt_and_cut_off() -> None:
    parser = ChatOutputParser(reasoning=THINK, starts_in_reasoning=True)
    parser.feed("\nstill thinking")
    parser.finish()
    assert (parser.reasoning, parser.content) == ("still thinking", "")
    assert prompt_opens_reasoning("<|im_start|>assistant\n<think>\n", THINK)
    assert not prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n", THINK)
    assert not prompt_opens_reasoning("anything<think>\n", None)


def test_no_reasoning_block_means_none() -> None:
    parser = ChatOutputParser(reasoning=THINK)
    parser.feed("Hello!")
    parser.finish()
    assert (parser.reasoning, parser.content) == (None, "Hello!")


KW = {"enable_thinking": False}


@pytest.mark.parametrize(("top", "extra", "expected"), [
    (KW, {"extra_body": {"chat_template_kwargs": {"enable_thinking": True}}}, KW),
    (None, {"extra_body": {"chat_template_kwargs": KW}}, KW),
    (None, {"extra_body": {"chat_template_kwargs": KW, "preserve_thinking": True}}, KW),
    (None, {"extra_body": {"preserve_thinking": True}}, {"preserve_thinking": True}),
    (None, {"preserve_thinking": True}, {"preserve_thinking": True}),
    ({"new_kwarg": [1]}, {}, {"new_kwarg": [1]}),
    (None, {}, {}),
])
def test_kwargs_precedence(top: Any, extra: dict[str, Any], expected: dict[str, Any]) -> None:
    assert request_kwargs(top, extra) == expected


@pytest.mark.parametrize(("top", "extra"), [
    ("x", {}), (None, {"extra_body": 3}), (None, {"extra_body": {"chat_template_kwargs": []}}),
    (None, {"preserve_thinking": "yes"}),
    # a shape precedence leaves unused is checked all the same
    (KW, {"extra_body": {"chat_template_kwargs": 5}}), (KW, {"preserve_thinking": None}),
    (None, {"extra_body": {"chat_template_kwargs": KW, "preserve_thinking": "yes"}}),
])
def test_kwargs_bad_shapes_are_400(top: Any, extra: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError):
        request_kwargs(top, extra)


def test_server_kwargs_merge() -> None:
    server = parse_server_kwargs('{"enable_thinking": false, "custom": 1}')
    assert merged_kwargs(server, {"enable_thinking": True}) == {"enable_thinking": True,
                                                               "custom": 1}
    with pytest.raises(ValueError):
        parse_server_kwargs("[1]")


F = {"type": "function", "function": {"name": "f"}}
G = {"type": "function", "function": {"name": "g"}}


def test_tool_choice_rules() -> None:
    assert plan_tools([F], None).tools == [F]
    assert plan_tools([], "auto").tools is None
    assert plan_tools([F], "none").tools is None
    required = plan_tools([F, G], "required")
    assert required.required and required.tools == [F, G] and required.instruction
    named = plan_tools([F, G], {"type": "function", "function": {"name": "g"}})
    assert named.tools == [G] and named.forced_name == "g"


@pytest.mark.parametrize(("tools", "choice"), [
    (None, "required"), ([], "required"), ([F], {"type": "function", "function": {"name": "x"}}),
    ([F], {"type": "function", "function": {"name": ""}}), ([F], {"type": "tool"}),
    ([F], "always"), ([F], 3), ([{"type": "function"}], None), ("f", None),
])
def test_tool_choice_errors(tools: Any, choice: Any) -> None:
    with pytest.raises(InvalidRequestError):
        plan_tools(tools, choice)


def test_instruction_placement_copies() -> None:
    sys_first = [{"role": "user", "content": "u"}, {"role": "system", "content": "s"}]
    out = place_instruction(sys_first, "CALL")
    assert out[1]["content"] == "s\n\nCALL" and sys_first[1]["content"] == "s"
    users = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
             {"role": "user", "content": "c"}]
    assert place_instruction(users, "CALL")[2]["content"] == "c\n\nCALL"
    assert place_instruction([{"role": "assistant", "content": "x"}], "CALL")[0] == {
        "role": "system", "content": "CALL"}


def test_rolling_checkpoint() -> None:
    messages = [
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "<think>\nold\n</think>\n\na1", "reasoning_content": "r"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": "<think>\nnew\n</think>\n\ncall"},
        {"role": "tool", "content": "42"},
    ]
    out = apply_rolling_checkpoint(messages, THINK, preserve=False)
    assert out[1]["content"] == "a1" and "reasoning_content" not in out[1]
    assert out[3]["content"] == messages[3]["content"]  # after the latest user turn: kept
    assert messages[1]["content"].startswith("<think>")  # the input is not modified
    assert apply_rolling_checkpoint(messages, THINK, preserve=True) == messages
    assert apply_rolling_checkpoint(messages, None, preserve=False) == messages


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


@pytest.mark.parametrize("schema", [
    {"description": "x" * 70_000},
    _nested(40),
    {"properties": {f"p{i}": {"$ref": "#/$defs/s"} for i in range(65)}},
    [1],
])
def test_schema_limits(schema: Any) -> None:
    with pytest.raises(InvalidRequestError) as info:
        check_schema_limits(schema, "response_format")
    assert "xxxx" not in info.value.message and "p64" not in info.value.message


def test_schema_within_limits() -> None:
    check_schema_limits(_nested(10), "response_format")


def test_cli_chat_template_flags(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlxcel.cli import build_parser, config_from_args

    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}", encoding="utf-8")
    monkeypatch.setenv("LLAMA_ARG_CHAT_TEMPLATE_KWARGS", '{"enable_thinking": false}')
    config = config_from_args(build_parser().parse_args(["--chat-template-file", str(template)]))
    assert config.chat_template == "{{ messages }}"
    assert config.chat_template_kwargs == {"enable_thinking": False}
    inline = config_from_args(build_parser().parse_args(
        ["--chat-template", "{{ x }}", "--chat-template-kwargs", '{"a": 1}']))
    assert inline.chat_template == "{{ x }}" and inline.chat_template_kwargs == {"a": 1}
    with pytest.raises(SystemExit):
        config_from_args(build_parser().parse_args(["--chat-template-kwargs", "[]"]))
