"""Tests for mlxcel_conformance.sse: the WHATWG event-stream rules and the incremental parser."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from real_stream_corpus import all_files, ids, read

from mlxcel_conformance.sse import SSEEvent, SSEParser, iter_sse, parse_sse

SSE_FILES = [p for p in all_files() if p.suffix == ".sse"]


def test_fields_and_multiline_data() -> None:
    text = "event: greet\nid: 7\nretry: 1500\ndata: a\ndata:b\ndata:  c\n\n"
    (event,) = parse_sse(text).events
    assert event == SSEEvent(
        event="greet", data="a\nb\n c", id="7", retry=1500, raw=text.removesuffix("\n")
    )


def test_event_without_event_line_has_no_name() -> None:
    (event,) = parse_sse("data: {}\n\n").events
    assert event.event is None and event.id is None and event.retry is None


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_every_line_ending(newline: str) -> None:
    text = newline.join(["event: x", "data: 1", "", "data: 2", "", ""])
    stream = parse_sse(text)
    assert [(e.event, e.data) for e in stream.events] == [("x", "1"), (None, "2")]
    assert stream.trailing_incomplete == ""


def test_comments_are_not_events() -> None:
    stream = parse_sse(": keep-alive\n\n:again\ndata: x\n\n")
    assert [e.data for e in stream.events] == ["x"]
    assert stream.comments == ("keep-alive", "again")
    assert stream.discarded == ()


def test_field_without_colon_and_empty_data() -> None:
    (event,) = parse_sse("data\n\n").events
    assert event.data == ""


def test_blocks_without_data_dispatch_nothing_but_are_kept() -> None:
    stream = parse_sse("event: ping\n\nretry: 10\n\ndata: x\n\n")
    assert [e.data for e in stream.events] == ["x"]
    assert stream.discarded == ("event: ping\n", "retry: 10\n")


def test_invalid_id_and_retry_are_ignored() -> None:
    (event,) = parse_sse("id: a\0b\nretry: 12s\ndata: x\n\n").events
    assert event.id is None and event.retry is None


def test_unknown_fields_are_ignored_but_kept_in_raw() -> None:
    (event,) = parse_sse('{"a": 1}\ndata: x\n\n').events
    assert event.data == "x" and event.raw.startswith('{"a": 1}')


def test_leading_bom_is_stripped() -> None:
    (event,) = parse_sse("\ufeffdata: x\n\n").events
    assert event.data == "x"


@pytest.mark.parametrize(
    ("text", "trailing"),
    [
        ("data: a\n\ndata: b\n", "data: b\n"),
        ("data: a\n\ndata: b", "data: b"),
        ("data: a\n\nevent: x\ndata: b\r", "event: x\ndata: b\r"),
    ],
)
def test_trailing_event_without_blank_line_is_incomplete(text: str, trailing: str) -> None:
    stream = parse_sse(text)
    assert [e.data for e in stream.events] == ["a"]
    assert stream.trailing_incomplete == trailing


def test_trailing_comment_is_not_incomplete() -> None:
    stream = parse_sse("data: a\n\n: bye")
    assert stream.trailing_incomplete == "" and stream.comments == ("bye",)


def test_events_are_returned_as_soon_as_complete() -> None:
    parser = SSEParser()
    assert parser.feed("data: a\n") == []
    assert [e.data for e in parser.feed("\ndata: b")] == ["a"]
    assert [e.data for e in parser.feed("\n\n")] == ["b"]
    assert parser.close() == []


def test_crlf_split_across_chunks() -> None:
    parser = SSEParser()
    events = parser.feed("data: a\r") + parser.feed("\n\r") + parser.feed("\n")
    parser.close()
    assert events == [SSEEvent(event=None, data="a", raw="data: a\r\n")]


def test_feed_after_close_is_an_error() -> None:
    parser = SSEParser()
    parser.close()
    with pytest.raises(ValueError):
        parser.feed("data: x\n\n")


def test_iter_sse_over_chunks() -> None:
    assert [e.data for e in iter_sse(["da", "ta: 1\n", "\ndata: 2\n\n"])] == ["1", "2"]


def _chunked(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


def _parse_chunks(chunks: list[str]) -> tuple[object, ...]:
    parser = SSEParser()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    events += parser.close()
    stream = parser.stream(events)
    return stream.events, stream.trailing_incomplete, stream.comments, stream.discarded


@pytest.mark.parametrize("path", SSE_FILES, ids=ids(SSE_FILES))
@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=1 << 20), max_size=40))
def test_real_streams_any_chunking_same_events(path: object, cuts: list[int]) -> None:
    text = read(path)  # type: ignore[arg-type]
    whole = parse_sse(text)
    expected = whole.events, whole.trailing_incomplete, whole.comments, whole.discarded
    assert _parse_chunks(_chunked(text, cuts)) == expected


_values = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\0"),
    max_size=12,
)
_block = st.fixed_dictionaries(
    {
        "event": st.none() | _values.filter(lambda v: v != ""),
        "data": st.lists(_values, min_size=1, max_size=3),
    }
)


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(_block, max_size=6),
    newlines=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=1),
    cuts=st.lists(st.integers(min_value=0, max_value=1 << 16), max_size=10),
)
def test_generated_streams_any_line_endings_and_chunking(
    blocks: list[dict[str, object]], newlines: list[str], cuts: list[int]
) -> None:
    lines: list[str] = []
    for block in blocks:
        if block["event"] is not None:
            lines.append(f"event: {block['event']}")
        lines.extend(f"data: {value}" for value in block["data"])  # type: ignore[attr-defined]
        lines.append("")
    parts: list[str] = []
    for i, line in enumerate(lines):
        newline = newlines[i % len(newlines)]
        if not line and newline == "\n" and parts and parts[-1].endswith("\r"):
            newline = "\r\n"  # "\r" then a bare "\n" would read as one CRLF
        parts.append(line + newline)
    text = "".join(parts)
    stream = parse_sse(text)
    assert [(e.event, e.data) for e in stream.events] == [
        (b["event"], "\n".join(b["data"]))
        for b in blocks  # type: ignore[arg-type]
    ]
    assert stream.trailing_incomplete == ""
    whole = stream.events, stream.trailing_incomplete, stream.comments, stream.discarded
    assert _parse_chunks(_chunked(text, cuts)) == whole
