"""Every tool-call format on model text in its wire shape: whole, split at every chunk size
(delimiters cut across token boundaries), malformed; markup never reaches the content."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlxcel.chat.stream_filter import CallArguments, CallStart, ChatOutputParser, ContentPiece
from mlxcel.chat.tool_formats import FORMAT_NAMES, detect_format, load_format

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "get_time", "parameters": {
        "type": "object", "properties": {"timezone": {"type": "string"}}}}},
]
PARIS = ("get_weather", {"city": "Paris", "days": 2})
TOKYO = ("get_time", {"timezone": "Asia/Tokyo"})

# format: (text the model generated, expected calls, expected content, malformed text)
CASES: dict[str, tuple[str, list[tuple[str, dict[str, Any]]], str, str]] = {
    "hermes": (
        'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", '
        '"days": 2}}\n</tool_call>\n<tool_call>\n{"name": "get_time", "arguments": '
        '{"timezone": "Asia/Tokyo"}}\n</tool_call>',
        [PARIS, TOKYO], "Let me check.",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": </tool_call>',
    ),
    "qwen3_coder": (
        "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
        [PARIS], "",
        "<tool_call>\n<parameter=city>\nParis\n</parameter>\n</tool_call>",
    ),
    "mistral_nemo": (
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}, '
        '{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}]',
        [PARIS, TOKYO], "",
        '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Par',
    ),
    "mistral_bracketed": (
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 2}'
        '[TOOL_CALLS]get_time[ARGS]{"timezone": "Asia/Tokyo"}',
        [PARIS, TOKYO], "",
        '[TOOL_CALLS]get_weather{"city": "Paris"}',
    ),
    "llama3": (
        '{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}',
        [PARIS], "",
        '{"name": "get_weather", "parameters": {"city": "Paris"',
    ),
    "generic_json": (
        '{"name": "get_time", "arguments": {"timezone": "Asia/Tokyo"}}',
        [TOKYO], "",
        '{"name": "get_time", "arguments": 3}',
    ),
    "pythonic": (
        'Checking. <|tool_call_start|>[get_weather(city="Paris", days=2), '
        'get_time(timezone="Asia/Tokyo")]<|tool_call_end|>',
        [PARIS, TOKYO], "Checking.",
        "<|tool_call_start|>[get_weather(city=Paris!)]<|tool_call_end|>",
    ),
    "functionary_v31": (
        '<function=get_weather>{"city": "Paris", "days": 2}</function>',
        [PARIS], "",
        '<function=get_weather>{"city": </function>',
    ),
    "functionary_v32": (
        'all\nSure.>>>get_weather\n{"city": "Paris", "days": 2}',
        [PARIS], "all\nSure.",
        '>>>get_weather\n{"city": ',
    ),
    "command_r": (
        'Action: get_weather\nAction Input: {"city": "Paris", "days": 2}',
        [PARIS], "",
        "Action: get_weather\nAction Input: {oops",
    ),
    "granite": (
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]',
        [PARIS], "",
        "<tool_call>[{]",
    ),
    "gemma4": (
        '<|tool_call>call:get_weather{city:<|"|>Paris<|"|>,days:2}<tool_call|>',
        [PARIS], "",
        "<|tool_call>get_weather(Paris)<tool_call|>",
    ),
    "function_gemma": (
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>,days:2}"
        "<end_function_call>",
        [PARIS], "",
        "<start_function_call>weather please<end_function_call>",
    ),
    "kimi_k2": (
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        '<|tool_call_argument_begin|>{"city": "Paris", "days": 2}<|tool_call_end|>'
        "<|tool_calls_section_end|>",
        [PARIS], "",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        "<|tool_calls_section_end|>",
    ),
    "minimax_m2": (
        '<minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Paris'
        '</parameter>\n<parameter name="days">2</parameter>\n</invoke>\n</minimax:tool_call>',
        [PARIS], "",
        "<minimax:tool_call>\n<invoke>\n</minimax:tool_call>",
    ),
    "minimax_m3": (
        ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="get_weather">'
        "]<]minimax[>[<city>Paris]<]minimax[>[</city>]<]minimax[>[ <days>2]<]minimax[>[</days>"
        "]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
        [PARIS], "",
        "]<]minimax[>[<tool_call>nothing]<]minimax[>[</tool_call>",
    ),
    "glm47": (
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
        "<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
        [PARIS], "",
        "<tool_call>\n<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>",
    ),
    "longcat": (
        "<longcat_tool_call>get_weather\n<longcat_arg_key>city</longcat_arg_key>\n"
        "<longcat_arg_value>Paris</longcat_arg_value>\n<longcat_arg_key>days"
        "</longcat_arg_key>\n<longcat_arg_value>2</longcat_arg_value>\n</longcat_tool_call>",
        [PARIS], "",
        "<longcat_tool_call>\n</longcat_tool_call>",
    ),
    "harmony": (
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"city": "Paris", "days": 2}<|call|>',
        [PARIS], "",
        "<|channel|>commentary to=functions.get_weather <|message|>{nope<|call|>",
    ),
}
MARKERS = ("<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|tool_call", "<function=",
           "<start_function_call>", "<|tool_calls_section", "<minimax", "]<]minimax",
           "<arg_key>", "<longcat", "to=functions", "<|call|>", "[ARGS]")


def run(name: str, text: str, step: int) -> tuple[ChatOutputParser, list[Any]]:
    parser = ChatOutputParser(tool_format=load_format(name), tools=TOOLS)
    pieces: list[Any] = []
    for i in range(0, len(text), step):
        pieces += parser.feed(text[i:i + step])
    pieces += parser.finish()
    return parser, pieces


def test_every_registered_format_has_a_case() -> None:
    assert sorted(CASES) == sorted(FORMAT_NAMES)
    assert len(FORMAT_NAMES) == 19


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("step", [1, 2, 3, 5, 7, 10_000])
def test_format_parses_split_text(name: str, step: int) -> None:
    text, expected, content, _ = CASES[name]
    parser, pieces = run(name, text, step)
    got = [(c.name, json.loads(c.arguments)) for c in parser.calls]
    assert got == expected
    assert parser.content == content
    streamed_content = "".join(p.text for p in pieces if isinstance(p, ContentPiece))
    assert streamed_content == content
    # the stream's calls: one start each, argument fragments adding up to the final arguments
    starts = [p for p in pieces if isinstance(p, CallStart)]
    assert [(s.index, s.name) for s in starts] == [(i, n) for i, (n, _) in enumerate(expected)]
    for call, start in zip(parser.calls, starts, strict=True):
        args = "".join(p.fragment for p in pieces
                       if isinstance(p, CallArguments) and p.index == start.index)
        assert args == call.arguments and start.id == call.id


@pytest.mark.parametrize("name", sorted(CASES))
def test_malformed_call_never_leaks_markup(name: str) -> None:
    _, _, _, bad = CASES[name]
    parser, pieces = run(name, bad, 3)
    for marker in MARKERS:
        assert marker not in parser.content
    for call in parser.calls:  # a half-streamed call may close, but never as a fake success
        assert call.name in ("get_weather", "get_time")


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_tools_no_parsing(name: str) -> None:
    text = CASES[name][0]
    parser = ChatOutputParser(tool_format=load_format(name), tools=None)
    parser.feed(text)
    parser.finish()
    assert parser.calls == [] and parser.content == text


def test_partial_delimiter_released_as_text() -> None:
    parser = ChatOutputParser(tool_format=load_format("hermes"), tools=TOOLS)
    first = parser.feed("a <tool")
    assert "".join(p.text for p in first) == "a"
    rest = parser.feed("box> b") + parser.finish()
    assert parser.content == "a <toolbox> b" and parser.calls == []
    assert "".join(p.text for p in first + rest) == "a <toolbox> b"


TEMPLATES = {
    "hermes": "{% if tools %}<tool_call>{{ tools }}</tool_call>{% endif %}",
    "qwen3_coder": "{% if tools %}<tool_call><function=x><parameter=y>{% endif %}",
    "mistral_nemo": "{% if tools %}[AVAILABLE_TOOLS]{{ tools }}[TOOL_CALLS]{% endif %}",
    "mistral_bracketed": "{% if tools %}[TOOL_CALLS]{{ name }}[ARGS]{% endif %}",
    "llama3": "{% if tools %}<|python_tag|>{% endif %}<|eot_id|>",
    "kimi_k2": "{% if tools %}<|tool_calls_section_begin|>{% endif %}",
    "glm47": "{% if tools %}<tool_call>{{ n }}<arg_key>{% endif %}",
    "granite": "<|start_of_role|>{% if tools %}<tool_call>{% endif %}",
    "harmony": "<|channel|>commentary to=functions.{% if tools %}{% endif %}",
    "generic_json": "{% if tools %}{{ tools | tojson }}{% endif %}",
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_detection_from_template(name: str) -> None:
    fmt = detect_format(TEMPLATES[name])
    assert fmt is not None and fmt.name == name


def test_template_without_tools_has_no_format() -> None:
    assert detect_format("{{ messages }}") is None
    assert detect_format(None) is None
