"""``tool_formats/head_stream.py``: each format's incremental ``head_stream`` reports, after every
piece, exactly what its whole-body ``stream_head`` gives on the block so far (as the output
parser reads it: the name once known, then the arguments text added since the last piece), on
well-formed calls, cut ones, and text built from the formats' own markup at random."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlxcel.chat.tool_formats import FORMAT_NAMES, load_format
from mlxcel.chat.tool_formats.base import ToolFormat, Tools
from mlxcel.chat.tool_formats.head_stream import (
    HeadGrowth,
    NoHeadStream,
    WholeBodyHeadStream,
)

TOOLS: Tools = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}},
]
STREAMING = ("hermes", "llama3", "generic_json", "mistral_nemo", "mistral_bracketed",
             "qwen3_coder")

BODIES: dict[str, list[str]] = {
    "hermes": [
        '\n{"name": "get_weather", "arguments": {"city": "Pa\\"ris", "days": [1, {"a": 2}]}}\n',
        '{ "name" : "get\\u0041" ,\n "parameters" :\u00a0{"city": "x y "  }  } trailing',
        '{"name": "f", "arguments": "{\\"city\\": 1}"}',
        '{"name": "", "arguments": {}}',
        '{"name": "bad\\q", "arguments": {"a": 1}}',
        '{"arguments": {"a": 1}, "name": "f"}',
    ],
    "llama3": [
        '<|python_tag|>  {"name": "get_weather", "parameters": {"city": "a  b ",  "days": 2 }} ',
        '{"name": "get_weather", "parameters": {"city": "Paris"\n\n',
        '<|python_ta {"name": "f", "parameters": {}}',
    ],
    "generic_json": [
        '{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}',
        '[{"name": "get_weather", "arguments": {"city": "Paris"}}]',
    ],
    "mistral_nemo": [
        ' [{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "g", "arguments"'
        ': {}}]',
        '{"name": "get_weather", "arguments": {}}',
    ],
    "mistral_bracketed": [
        ' get_weather[ARGS] {"city": "[TOOL_CALLS]"}',
        'get_weather[ARGS]{"city": "Paris", "days": [2]}[TOOL_CALLS]get_time[ARGS]{}',
        'get_weather[ARGS]\u00a0{"city": 1}',
        'get_weather[ARGS]["a", {"b": "]"}] tail',
        'get weather[ARGS]{}',
    ],
    "qwen3_coder": [
        "\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n"
        "</parameter>\n</function>\n",
        "<function=get_weather><parameter=city>a<parameter=days>3</parameter><parameter=city>"
        "b</parameter>",
        "<function=get_weather><parameter=x>1</parameter></function><function=g><parameter=y>"
        "2</parameter>",
        "<function=get_weather><parameter=abc</parameter><parameter=days>4</parameter>",
        "<function=f\n><parameter=a>1</parameter>",
    ],
}

# Markup of every streaming format, for random blocks.
ATOMS = ['{', '}', '[', ']', '"', '\\', ' ', '\n', '\u00a0', ':', ',', 'a', '"name"', '"f"',
         '"arguments"', '"parameters"', '[ARGS]', '[TOOL_CALLS]', '<|python_tag|>',
         '<function=', '<parameter=', '</parameter>', '>', 'city', '</function>', '1']


def reference(fmt: ToolFormat, chunks: list[str]) -> list[HeadGrowth | None]:
    """What the parser made of ``stream_head`` on the whole block after each piece."""
    body, sent = "", ""
    out: list[HeadGrowth | None] = []
    for chunk in chunks:
        body += chunk
        head = fmt.stream_head(body, TOOLS)
        if head is None:
            out.append(None)
            continue
        fragment = ""
        if head.arguments is not None and head.arguments.startswith(sent):
            fragment = head.arguments[len(sent):]
            sent = head.arguments if fragment else sent
        out.append(HeadGrowth(head.name, fragment))
    return out


def incremental(fmt: ToolFormat, chunks: list[str]) -> list[HeadGrowth | None]:
    stream = fmt.head_stream(TOOLS)
    assert not isinstance(stream, WholeBodyHeadStream)
    out: list[HeadGrowth | None] = [stream.feed(chunk) for chunk in chunks]
    return out


def split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False)]


def check(name: str, body: str, cuts: list[int]) -> None:
    fmt = load_format(name)
    for chunks in (split(body, cuts), list(body), [body]):
        assert incremental(fmt, chunks) == reference(fmt, chunks), chunks


@pytest.mark.parametrize("name", STREAMING)
def test_every_prefix_of_the_sample_calls(name: str) -> None:
    for body in BODIES[name]:
        check(name, body, [])


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(STREAMING), st.data())
def test_samples_in_any_pieces(name: str, data: st.DataObject) -> None:
    body = data.draw(st.sampled_from(BODIES[name]))
    check(name, body, data.draw(st.lists(st.integers(min_value=0), max_size=12)))


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(STREAMING), st.lists(st.sampled_from(ATOMS), max_size=40),
       st.lists(st.integers(min_value=0), max_size=10))
def test_random_markup_in_any_pieces(name: str, atoms: list[str], cuts: list[int]) -> None:
    # Random blocks rarely open like a call, so each is also tried behind a valid opening.
    for opening in ("", BODIES[name][0][:40]):
        check(name, opening + "".join(atoms), cuts)


@pytest.mark.parametrize("name", sorted(set(FORMAT_NAMES) - set(STREAMING)))
def test_formats_without_streaming_read_nothing(name: str) -> None:
    assert isinstance(load_format(name).head_stream(TOOLS), NoHeadStream)


def test_a_format_with_only_stream_head_is_read_whole() -> None:
    class OnlyWhole(ToolFormat):
        def stream_head(self, body: str, tools: Tools) -> Any:
            return load_format("hermes").stream_head(body, tools)

    fmt = OnlyWhole()
    stream = fmt.head_stream(TOOLS)
    assert isinstance(stream, WholeBodyHeadStream)
    chunks = split(BODIES["hermes"][0], [5, 17, 40, 60])
    assert [stream.feed(chunk) for chunk in chunks] == reference(fmt, chunks)
