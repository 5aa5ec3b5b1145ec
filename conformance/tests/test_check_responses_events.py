"""Tests for checks/responses_events.py: the Responses state machine on real and broken streams."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from real_stream_corpus import (
    data_event,
    find,
    jsonl_events,
    named_events,
    payloads,
    rejects,
    stream,
)

from mlxcel_conformance.checks.responses_events import (
    ITEM_TRANSITIONS,
    STREAM_TRANSITIONS,
    check_responses_stream,
)
from mlxcel_conformance.sse import SSEEvent

TEXT = "openai-responses-stream-text.sse"
REASONING_CALL = "openai-responses-stream-reasoning-function-call.sse"
OLD_CALL = "openai-responses-stream-function-call-2025-03.sse"
FAILED = "openai-responses-stream-error-insufficient-quota.chunks.jsonl"

Items = list[dict[str, Any]]


def items(name: str) -> Items:
    return copy.deepcopy(payloads(stream(name).events))


def renumber(items_: Items) -> Items:
    """Keep sequence numbers valid so that a reordering is caught by the state machine."""
    for position, payload in enumerate(items_):
        if "sequence_number" in payload:
            payload["sequence_number"] = position
    return items_


def index_of(items_: Items, kind: str) -> int:
    return next(i for i, p in enumerate(items_) if p["type"] == kind)


def test_tables_are_total() -> None:
    targets = {state for table in STREAM_TRANSITIONS.values() for state in table.values()}
    assert targets <= set(STREAM_TRANSITIONS)
    assert {s for t in ITEM_TRANSITIONS.values() for s in t.values()} <= set(ITEM_TRANSITIONS)


def test_result_of_a_text_stream() -> None:
    result = check_responses_stream(stream(TEXT).events)
    assert result.terminal == "response.completed"
    assert result.output_text == "2+2 = 4"
    assert result.response["status"] == "completed"


def test_failed_stream_without_event_lines() -> None:
    result = check_responses_stream(jsonl_events(find(FAILED)))
    assert result.terminal == "response.failed" and result.response["status"] == "failed"


def test_completed_before_output_item_done_rejected() -> None:
    broken = items(TEXT)
    completed = broken.pop()
    broken.insert(index_of(broken, "response.output_item.done"), completed)
    with rejects("responses_event_order") as info:
        check_responses_stream(named_events(renumber(broken)))
    assert "left open" in info.value.message


def test_decreasing_sequence_number_rejected() -> None:
    broken = items(TEXT)
    broken[5]["sequence_number"] = 2
    with rejects("responses_event_order"):
        check_responses_stream(named_events(broken))


def test_mixed_sequence_numbers_rejected() -> None:
    broken = items(TEXT)
    del broken[4]["sequence_number"]
    with rejects("responses_event_order"):
        check_responses_stream(named_events(broken))


def test_consistently_absent_sequence_numbers_accepted() -> None:
    check_responses_stream(stream(OLD_CALL).events)


def test_event_name_differs_from_type_rejected() -> None:
    events = list(stream(TEXT).events)
    events[4] = SSEEvent(event="response.output_text.done", data=events[4].data)
    with rejects("responses_event_order"):
        check_responses_stream(events)


def test_missing_terminal_rejected() -> None:
    with rejects("responses_event_order") as info:
        check_responses_stream(named_events(items(TEXT)[:-1]))
    assert "ended" in info.value.message


def test_first_event_must_be_created() -> None:
    with rejects("responses_event_order"):
        check_responses_stream(named_events(items(TEXT)[1:]))


def test_items_before_in_progress_rejected() -> None:
    broken = items(TEXT)
    broken.insert(3, broken.pop(1))
    with rejects("responses_event_order") as info:
        check_responses_stream(named_events(renumber(broken)))
    assert "sequence_number" not in info.value.message


MUTATIONS = {
    "output-index-gap": lambda p: p[index_of(p, "response.output_item.added")].update(
        output_index=1
    ),
    "content-index": lambda p: p[index_of(p, "response.output_text.delta")].update(content_index=1),
    "item-id": lambda p: p[index_of(p, "response.output_text.delta")].update(item_id="msg_other"),
    "done-text": lambda p: p[index_of(p, "response.output_text.done")].update(text="2+2 = 5"),
    "delta-after-done": lambda p: p.insert(
        index_of(p, "response.content_part.done") + 1,
        copy.deepcopy(p[index_of(p, "response.output_text.delta")]),
    ),
    "no-part-done": lambda p: p.pop(index_of(p, "response.content_part.done")),
    "no-text-done": lambda p: p.pop(index_of(p, "response.output_text.done")),
    "args-on-message": lambda p: p[index_of(p, "response.output_text.delta")].update(
        type="response.function_call_arguments.delta"
    ),
    "after-completed": lambda p: p.append(copy.deepcopy(p[-1])),
    "completed-status": lambda p: p[-1]["response"].update(status="in_progress"),
    "output-mismatch": lambda p: p[-1]["response"].update(output=[]),
    "response-id": lambda p: p[1]["response"].update(id="resp_other"),
    "no-type": lambda p: p[3].pop("type"),
    "double-created": lambda p: p.insert(1, copy.deepcopy(p[0])),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_broken_text_stream_rejected(mutation: Any) -> None:
    broken = items(TEXT)
    mutation(renumber(broken))
    with rejects("responses_event_order") as info:
        check_responses_stream(named_events(renumber(broken)))
    assert "sequence_number" not in info.value.message


def test_function_arguments_must_match_deltas() -> None:
    broken = items(REASONING_CALL)
    broken[index_of(broken, "response.function_call_arguments.done")]["arguments"] = "{}"
    with rejects("responses_event_order"):
        check_responses_stream(named_events(broken))


def test_done_item_must_be_the_added_item() -> None:
    broken = items(OLD_CALL)
    broken[index_of(broken, "response.output_item.done")]["item"]["type"] = "message"
    with rejects("responses_event_order"):
        check_responses_stream(named_events(broken))


def test_error_may_end_a_stream_or_precede_failed() -> None:
    events = jsonl_events(find(FAILED))
    assert check_responses_stream(events[:3]).terminal == "error"
    assert check_responses_stream(events).response["status"] == "failed"


def test_nothing_after_failed() -> None:
    events = jsonl_events(find(FAILED))
    with rejects("responses_event_order"):
        check_responses_stream([*events, events[2]])


def test_unknown_item_events_are_tolerated() -> None:
    tolerant = items(OLD_CALL)
    at = index_of(tolerant, "response.function_call_arguments.done")
    tolerant.insert(at, {"type": "response.vendor_progress.tick", "output_index": 0})
    tolerant.insert(2, {"type": "response.vendor_heartbeat"})
    result = check_responses_stream(named_events(tolerant))
    assert result.unknown_events == ["response.vendor_heartbeat", "response.vendor_progress.tick"]


def test_empty_stream_rejected() -> None:
    with rejects("responses_event_order"):
        check_responses_stream([])


def test_error_event_needs_a_message() -> None:
    events = jsonl_events(find(FAILED))
    flat = {"type": "error", "sequence_number": 2, "code": "server_error", "message": "boom"}
    check_responses_stream([*events[:2], data_event(flat)])
    with rejects("responses_event_order"):
        check_responses_stream([*events[:2], data_event({"type": "error", "sequence_number": 2})])
