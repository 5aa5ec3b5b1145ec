"""Responses input items and Anthropic content blocks → chat-template messages."""

from __future__ import annotations

import pytest

from mlxcel.errors import InvalidRequestError
from mlxcel.families.anthropic.messages_wire import MessagesRequest, chat_tools, template_messages
from mlxcel.families.responses.input import input_messages, output_messages


def test_items_become_messages_with_tool_turns() -> None:
    messages = input_messages([
        {"role": "developer", "content": "Be terse."},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Weather?"}]},
        {"type": "reasoning", "id": "rs", "summary": [],
         "content": [{"type": "reasoning_text", "text": "think"}]},
        {"type": "function_call", "call_id": "c1", "name": "w", "arguments": '{"city": "P"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        {"type": "message", "role": "assistant", "status": "completed", "id": "m",
         "content": [{"type": "output_text", "text": "Sunny.", "annotations": []},
                     {"type": "refusal", "refusal": "!"}]},
    ])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant"]
    call = messages[2]
    assert call["reasoning_content"] == "think"
    assert call["tool_calls"][0]["function"] == {"name": "w", "arguments": {"city": "P"}}
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    assert messages[4]["content"] == "Sunny.!"


def test_media_parts_become_neutral_parts() -> None:
    # Whether the model can read them is decided when the prompt is rendered (chat/multimodal).
    (message,) = input_messages([{"role": "user", "content": [
        {"type": "input_text", "text": "What is this?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"},
        {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}]}])
    assert message["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image", "url": "data:image/png;base64,AA", "param": "input.0.content.1"},
        {"type": "audio", "param": "input.0.content.2"}]


@pytest.mark.parametrize("part", [
    {"type": "input_image", "file_id": "file-1"},
    {"type": "input_image"},
    {"type": "input_file", "file_id": "f"},
    {"type": "refusal", "refusal": "no"},  # only an assistant may refuse
])
def test_unreadable_parts_are_400(part: dict) -> None:
    with pytest.raises(InvalidRequestError):
        input_messages([{"role": "user", "content": [part]}])


def test_anthropic_blocks_map_to_tool_turns() -> None:
    request = MessagesRequest.model_validate({
        "max_tokens": 8,
        "system": [{"type": "text", "text": "Be terse."}],
        "messages": [
            {"role": "user", "content": "Weather?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "hm", "signature": ""},
                {"type": "tool_use", "id": "t1", "name": "w", "input": {"city": "P"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1",
                 "content": [{"type": "text", "text": "sunny"}]},
                {"type": "text", "text": "And?"}]},
        ],
        "tools": [{"name": "w", "input_schema": {"type": "object"}},
                  {"type": "web_search_20250305", "name": "web_search"}],
        "tool_choice": {"type": "any"},
    })
    messages = template_messages(request)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[2]["reasoning_content"] == "hm"
    assert messages[2]["tool_calls"][0]["function"]["arguments"] == {"city": "P"}
    tools = chat_tools(request)
    assert tools is not None and [t["function"]["name"] for t in tools] == ["w"]


def test_own_output_with_arguments_cut_by_max_output_tokens_is_kept_as_text() -> None:
    """A streamed response whose function call was cut by max_output_tokens: storing it once
    raised on the arguments (not JSON) after the last event, and the stream broke (the suite's
    schemathesis run found it)."""
    cut = {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"a": "b'}
    history = output_messages([cut])
    assert history[0]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": "b'}
    with pytest.raises(InvalidRequestError):  # from a client it is still a 400
        input_messages([cut])
