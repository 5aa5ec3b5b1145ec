"""Tests for checks/anthropic_events.py: the Messages stream state machine on real and broken
streams."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from real_stream_corpus import data_event, named_events, payloads, rejects, stream

from mlxcel_conformance.checks.anthropic_events import TRANSITIONS, check_anthropic_stream
from mlxcel_conformance.sse import SSEEvent

TEXT = "anthropic-stream-text.sse"
TOOL = "anthropic-stream-tool-use.sse"
THINKING = "anthropic-stream-thinking.sse"
REDACTED = "anthropic-stream-redacted-thinking.sse"
CODE = "anthropic-stream-server-tool-code-execution.sse"

Items = list[dict[str, Any]]


def items(name: str) -> Items:
    return copy.deepcopy(payloads(stream(name).events))


def index_of(items_: Items, kind: str, start: int = 0) -> int:
    return next(i for i, p in enumerate(items_) if p["type"] == kind and i >= start)


def test_table_is_total() -> None:
    assert {s for t in TRANSITIONS.values() for s in t.values()} <= set(TRANSITIONS)


def test_message_assembled_from_text_stream() -> None:
    result = check_anthropic_stream(stream(TEXT).events)
    (block,) = result.message["content"]
    assert block["type"] == "text" and block["text"].startswith("The weather in San Francisco")
    assert result.message["stop_reason"] == "end_turn"
    assert result.message["usage"]["output_tokens"] == 38


def test_tool_input_assembled() -> None:
    (block,) = check_anthropic_stream(stream(TOOL).events).message["content"]
    assert block["type"] == "tool_use" and isinstance(block["input"], dict) and block["input"]


def test_thinking_signature_assembled() -> None:
    thinking = check_anthropic_stream(stream(THINKING).events).message["content"][0]
    assert thinking["thinking"] and thinking["signature"]


def test_result_blocks_arrive_whole() -> None:
    content = check_anthropic_stream(stream(CODE).events).message["content"]
    assert content[3]["type"] == "bash_code_execution_tool_result"


def test_dropped_content_block_stop_rejected() -> None:
    broken = items(TEXT)
    broken.pop(index_of(broken, "content_block_stop"))
    with rejects("anthropic_event_order"):
        check_anthropic_stream(named_events(broken))


def test_changed_event_name_rejected() -> None:
    events = list(stream(TEXT).events)
    events[3] = SSEEvent(event="content_block_start", data=events[3].data)
    with rejects("anthropic_event_order"):
        check_anthropic_stream(events)


def test_missing_event_line_rejected() -> None:
    events = list(stream(TEXT).events)
    events[3] = data_event(payloads(events)[3])
    with rejects("anthropic_event_order") as info:
        check_anthropic_stream(events)
    assert "drops" in info.value.message


MUTATIONS = {
    "no-message-start": lambda p: p.pop(0),
    "no-message-stop": lambda p: p.pop(),
    "no-message-delta": lambda p: p.pop(index_of(p, "message_delta")),
    "delta-before-stop": lambda p: p.insert(
        index_of(p, "content_block_stop"), p.pop(index_of(p, "message_delta"))
    ),
    "ping-first": lambda p: p.insert(0, {"type": "ping"}),
    "after-stop": lambda p: p.append({"type": "ping"}),
    "block-index-1": lambda p: p[index_of(p, "content_block_start")].update(index=1),
    "delta-index": lambda p: p[index_of(p, "content_block_delta")].update(index=1),
    "stop-index": lambda p: p[index_of(p, "content_block_stop")].update(index=1),
    "json-in-text": lambda p: p[index_of(p, "content_block_delta")].update(
        delta={"type": "input_json_delta", "partial_json": "{}"}
    ),
    "text-not-string": lambda p: p[index_of(p, "content_block_delta")]["delta"].update(text=None),
    "stop-reason": lambda p: p[index_of(p, "message_delta")]["delta"].update(stop_reason="eos"),
    "no-output-tokens": lambda p: p[index_of(p, "message_delta")].pop("usage"),
    "start-content": lambda p: p[0]["message"].update(content=[{"type": "text", "text": "x"}]),
    "start-role": lambda p: p[0]["message"].update(role="user"),
    "two-message-deltas": lambda p: p.insert(-1, copy.deepcopy(p[index_of(p, "message_delta")])),
    "bad-error": lambda p: p.insert(2, {"type": "error", "error": {"message": "x"}}),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_broken_text_stream_rejected(mutation: Any) -> None:
    broken = items(TEXT)
    mutation(broken)
    with rejects("anthropic_event_order"):
        check_anthropic_stream(named_events(broken))


def test_tool_input_fragments_must_form_json() -> None:
    broken = items(TOOL)
    last_delta = index_of(broken, "content_block_stop") - 1
    broken[last_delta]["delta"]["partial_json"] += "]"
    with rejects("anthropic_event_order"):
        check_anthropic_stream(named_events(broken))


def test_thinking_after_signature_rejected() -> None:
    broken = items(THINKING)
    signature = next(
        i
        for i, p in enumerate(broken)
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "signature_delta"
    )
    broken.insert(signature + 1, copy.deepcopy(broken[signature - 1]))
    with rejects("anthropic_event_order"):
        check_anthropic_stream(named_events(broken))


def test_delta_on_redacted_thinking_rejected() -> None:
    broken = items(REDACTED)
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "x"},
    }
    broken.insert(index_of(broken, "content_block_stop"), delta)
    with rejects("anthropic_event_order"):
        check_anthropic_stream(named_events(broken))


def test_delta_on_tool_result_rejected() -> None:
    broken = items(CODE)
    start = next(
        i
        for i, p in enumerate(broken)
        if p["type"] == "content_block_start"
        and p["content_block"]["type"].endswith("_tool_result")
    )
    index = broken[start]["index"]
    delta = {
        "type": "content_block_delta",
        "index": index,
        "delta": {"type": "text_delta", "text": "x"},
    }
    broken.insert(start + 1, delta)
    with rejects("anthropic_event_order"):
        check_anthropic_stream(named_events(broken))


def test_error_event_is_terminal() -> None:
    prefix = items(TEXT)[:4]
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    assert check_anthropic_stream(named_events([*prefix, error])).terminal == "error"
    with rejects("anthropic_event_order"):
        check_anthropic_stream(named_events([*prefix, error, {"type": "ping"}]))


def test_unknown_block_type_tolerated() -> None:
    tolerant = items(TEXT)
    stop = index_of(tolerant, "content_block_stop")
    tolerant[stop + 1 : stop + 1] = [
        {"type": "content_block_start", "index": 1, "content_block": {"type": "compaction"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "compaction_delta"}},
        {"type": "content_block_stop", "index": 1},
    ]
    assert check_anthropic_stream(named_events(tolerant)).unknown_blocks == ["compaction"]
