"""Tests for checks/openai_chat.py and checks/openai_common.py on broken copies of real chat
streams and bodies."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from real_stream_corpus import find, read, rejects, stream

from mlxcel_conformance.checks.openai_chat import (
    check_chat_chunk_object,
    check_chat_chunk_order,
    check_chat_completion_body,
    check_chat_first_chunk_role,
    check_tool_call_deltas,
)
from mlxcel_conformance.checks.openai_common import (
    chat_logprobs_entries,
    check_logprobs_shape,
    check_no_usage_chunk,
    check_usage_chunk_last,
)
from mlxcel_conformance.checks.sse_checks import check_sse_framing

Chunks = list[dict[str, Any]]


def chunks(name: str) -> Chunks:
    return copy.deepcopy(check_sse_framing(stream(name)))


def body(name: str) -> dict[str, Any]:
    return json.loads(read(find(name)))


TEXT = "openai-chat-stream-text-usage.sse"
TEXT_2024 = "openai-chat-stream-text-usage-2024.sse"
N3 = "openai-chat-stream-n3-choices-2024.sse"
TOOL = "openai-chat-stream-tool-call.sse"
PARALLEL = "openai-chat-stream-parallel-tool-calls.sse"
LOGPROBS = "openai-chat-stream-logprobs-2024.sse"


def test_chunk_identity_returned() -> None:
    identity = check_chat_chunk_object(chunks(TEXT))
    assert identity["model"] == "gpt-4o-mini-2024-07-18"


@pytest.mark.parametrize("key", ["id", "created", "model"])
def test_identity_change_rejected(key: str) -> None:
    stream_chunks = chunks(TEXT)
    stream_chunks[3][key] = stream_chunks[3][key] * 2
    with rejects("chat_chunk_object") as info:
        check_chat_chunk_object(stream_chunks)
    assert info.value.evidence["index"] == 3


def test_wrong_object_rejected() -> None:
    stream_chunks = chunks(TEXT)
    stream_chunks[1]["object"] = "chat.completion"
    with rejects("chat_chunk_object"):
        check_chat_chunk_object(stream_chunks)


def test_missing_role_in_first_chunk_rejected() -> None:
    stream_chunks = chunks(TEXT)
    del stream_chunks[0]["choices"][0]["delta"]["role"]
    with rejects("chat_first_chunk_role"):
        check_chat_first_chunk_role(stream_chunks)


def test_missing_role_of_second_choice_rejected() -> None:
    stream_chunks = chunks(N3)
    first_of_choice_2 = next(c for c in stream_chunks if c["choices"][0]["index"] == 2)
    first_of_choice_2["choices"][0]["delta"].pop("role")
    with rejects("chat_first_chunk_role"):
        check_chat_first_chunk_role(stream_chunks)


def test_interleaved_choices_accepted() -> None:
    assert check_chat_chunk_order(chunks(N3)) == {0: "stop", 1: "stop", 2: "stop"}


def test_duplicate_finish_chunk_rejected() -> None:
    stream_chunks = chunks(TEXT)
    finish = next(
        i for i, c in enumerate(stream_chunks) if c["choices"] and c["choices"][0]["finish_reason"]
    )
    stream_chunks.insert(finish + 1, copy.deepcopy(stream_chunks[finish]))
    with rejects("chat_chunk_order"):
        check_chat_chunk_order(stream_chunks)


def test_content_after_finish_rejected() -> None:
    stream_chunks = chunks(TEXT)
    stream_chunks.insert(-1, copy.deepcopy(stream_chunks[1]))  # a content chunk after the finish
    with rejects("chat_chunk_order"):
        check_chat_chunk_order(stream_chunks)


def test_missing_finish_rejected() -> None:
    stream_chunks = [
        c for c in chunks(TEXT) if not (c["choices"] and c["choices"][0]["finish_reason"])
    ]
    with rejects("chat_chunk_order"):
        check_chat_chunk_order(stream_chunks)


def test_unknown_finish_reason_rejected() -> None:
    stream_chunks = chunks(TEXT)
    stream_chunks[-2]["choices"][0]["finish_reason"] = "eos"
    with rejects("chat_chunk_order"):
        check_chat_chunk_order(stream_chunks)


def test_usage_chunk_returned() -> None:
    assert check_usage_chunk_last(chunks(TEXT_2024))["total_tokens"] == 44


def test_usage_chunk_before_content_rejected() -> None:
    stream_chunks = chunks(TEXT)
    stream_chunks.insert(2, stream_chunks.pop())
    with rejects("usage_chunk_last"):
        check_usage_chunk_last(stream_chunks)


def test_missing_usage_chunk_rejected() -> None:
    with rejects("usage_chunk_last"):
        check_usage_chunk_last(chunks(TEXT)[:-1])


def test_usage_on_a_choice_chunk_rejected() -> None:
    # llama-server style: usage riding on the finish chunk
    stream_chunks = chunks(TEXT)
    stream_chunks[-2]["usage"] = stream_chunks.pop()["usage"]
    with rejects("usage_chunk_last"):
        check_usage_chunk_last(stream_chunks)


def test_inconsistent_usage_rejected() -> None:
    stream_chunks = chunks(TEXT)
    stream_chunks[-1]["usage"]["total_tokens"] += 1
    with rejects("usage_chunk_last"):
        check_usage_chunk_last(stream_chunks)


def test_no_usage_chunk() -> None:
    check_no_usage_chunk(chunks(TEXT)[:-1])  # `usage: null` everywhere is fine
    with rejects("no_usage_chunk"):
        check_no_usage_chunk(chunks(TEXT))


def test_tool_calls_assembled() -> None:
    calls = check_tool_call_deltas(chunks(PARALLEL))[0]
    assert [c["function"]["name"] for c in calls] == ["get_country", "get_product_name"]
    assert check_tool_call_deltas(chunks(TEXT)) == {}


def _tool_deltas(stream_chunks: Chunks) -> list[dict[str, Any]]:
    return [
        d for c in stream_chunks for ch in c["choices"] for d in ch["delta"].get("tool_calls") or []
    ]


@pytest.mark.parametrize("field", ["id", "type"])
def test_first_tool_delta_without_id_or_type_rejected(field: str) -> None:
    stream_chunks = chunks(TOOL)
    del _tool_deltas(stream_chunks)[0][field]
    with rejects("tool_call_deltas"):
        check_tool_call_deltas(stream_chunks)


def test_repeated_function_name_rejected() -> None:
    stream_chunks = chunks(TOOL)
    _tool_deltas(stream_chunks)[1]["function"]["name"] = "get_capital"
    with rejects("tool_call_deltas"):
        check_tool_call_deltas(stream_chunks)


def test_broken_arguments_rejected() -> None:
    stream_chunks = chunks(TOOL)
    _tool_deltas(stream_chunks)[-1]["function"]["arguments"] = '"'
    with rejects("tool_call_deltas"):
        check_tool_call_deltas(stream_chunks)


def test_skipped_tool_index_rejected() -> None:
    stream_chunks = chunks(PARALLEL)
    for delta in _tool_deltas(stream_chunks):
        if delta["index"] == 1:
            delta["index"] = 2
    with rejects("tool_call_deltas"):
        check_tool_call_deltas(stream_chunks)


def test_logprobs_entries_collected() -> None:
    entries = check_logprobs_shape(chat_logprobs_entries(chunks(LOGPROBS)), top_logprobs=0)
    assert [e["token"] for e in entries] == ["Foo", "!"]


@pytest.mark.parametrize(
    "mutation",
    [
        lambda e: e.update(logprob=0.5),
        lambda e: e.update(logprob="-1"),
        lambda e: e.update(token=None),
        lambda e: e.update(bytes=[300]),
        lambda e: e.pop("top_logprobs"),
        lambda e: e.update(
            top_logprobs=[
                {"token": "a", "logprob": -2.0, "bytes": [97]},
                {"token": "b", "logprob": -1.0, "bytes": [98]},
            ]
        ),
    ],
    ids=["positive", "string", "token", "bytes", "no-top", "unsorted"],
)
def test_bad_logprobs_rejected(mutation: Any) -> None:
    entries = chat_logprobs_entries(chunks(LOGPROBS))
    mutation(entries[0])
    with rejects("logprobs_shape"):
        check_logprobs_shape(entries)


def test_top_logprobs_count() -> None:
    with rejects("logprobs_shape"):
        check_logprobs_shape(chat_logprobs_entries(chunks(LOGPROBS)), top_logprobs=2)


BODY_MUTATIONS = {
    "object": lambda b: b.update(object="chat.completion.chunk"),
    "no-choices": lambda b: b.update(choices=[]),
    "role": lambda b: b["choices"][0]["message"].update(role="user"),
    "content": lambda b: b["choices"][0]["message"].update(content=["x"]),
    "no-content": lambda b: b["choices"][0]["message"].pop("content"),
    "finish-null": lambda b: b["choices"][0].update(finish_reason=None),
    "no-logprobs": lambda b: b["choices"][0].pop("logprobs"),
    "usage": lambda b: b["usage"].update(total_tokens=1),
    "created": lambda b: b.update(created="now"),
}


@pytest.mark.parametrize("mutation", BODY_MUTATIONS.values(), ids=BODY_MUTATIONS.keys())
def test_broken_body_rejected(mutation: Any) -> None:
    broken = body("openai-chat-completion-text.json")
    mutation(broken)
    with rejects("chat_completion_body"):
        check_chat_completion_body(broken)


def test_broken_tool_call_in_body_rejected() -> None:
    broken = body("openai-chat-completion-tool-calls.json")
    broken["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = "{"
    with rejects("chat_completion_body"):
        check_chat_completion_body(broken)
