"""Tests for checks/sse_checks.py: broken copies of real streams are rejected by name."""

from __future__ import annotations

from real_stream_corpus import find, read, rejects, stream, to_text

from mlxcel_conformance.checks.sse_checks import (
    check_done_terminator,
    check_no_done_terminator,
    check_sse_framing,
)
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.sse import parse_sse

CHAT = "openai-chat-stream-text-usage.sse"
ANTHROPIC = "anthropic-stream-text.sse"


def test_framing_returns_json_payloads_without_done() -> None:
    payloads = check_sse_framing(stream(CHAT))
    assert payloads[0]["object"] == "chat.completion.chunk"
    assert len(payloads) == len(stream(CHAT).events) - 1


def test_framing_accepts_raw_text() -> None:
    assert check_sse_framing(read(find(ANTHROPIC)))[0]["type"] == "message_start"


def test_truncated_stream_is_rejected() -> None:
    text = read(find(CHAT)).removesuffix("\n\n")
    with rejects("sse_framing") as info:
        check_sse_framing(text)
    assert info.value.evidence["trailing"] == "data: [DONE]"


def test_non_json_data_is_rejected() -> None:
    events = list(stream(CHAT).events)
    broken = to_text(events[:2]) + "data: {not json\n\n" + to_text(events[2:])
    with rejects("sse_framing") as info:
        check_sse_framing(broken)
    assert info.value.evidence["index"] == 2


def test_raw_json_lines_without_framing_are_rejected() -> None:
    # a stream written as JSON lines, as a careless server might: no event is ever dispatched
    with rejects("sse_framing"):
        check_sse_framing('{"type": "response.created"}\n\n')


def test_event_line_without_data_is_rejected() -> None:
    with rejects("sse_framing"):
        check_sse_framing("event: ping\n\n" + read(find(ANTHROPIC)))


def test_unknown_field_line_is_rejected_with_medium_severity() -> None:
    with rejects("sse_framing") as info:
        check_sse_framing("date: now\ndata: {}\n\n")
    assert info.value.severity is Severity.MEDIUM


def test_non_json_data_allowed_when_not_a_json_stream() -> None:
    assert check_sse_framing("data: plain text\n\n", json_data=False) == []


def test_done_terminator_accepts_real_stream() -> None:
    events = stream(CHAT).events
    assert check_done_terminator(stream(CHAT)) == len(events) - 1


def test_dropped_done_is_rejected() -> None:
    events = stream(CHAT).events
    with rejects("done_terminator"):
        check_done_terminator(parse_sse(to_text(events[:-1])))


def test_duplicated_done_is_rejected() -> None:
    events = stream(CHAT).events
    with rejects("done_terminator"):
        check_done_terminator(parse_sse(to_text([*events, events[-1]])))


def test_event_after_done_is_rejected() -> None:
    events = stream(CHAT).events
    with rejects("done_terminator"):
        check_done_terminator(parse_sse(to_text([*events[:-1], events[-1], events[-2]])))


def test_no_done_terminator() -> None:
    check_no_done_terminator(stream(ANTHROPIC))
    with rejects("no_done_terminator"):
        check_no_done_terminator(read(find(ANTHROPIC)) + "data: [DONE]\n\n")
