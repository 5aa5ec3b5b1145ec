"""CPU per token of the chat output parser (``chat/stream_filter.py``) on one streamed tool call
whose arguments run to N tokens, for every tool-call format (issue 38: a parser that re-reads
the whole call on every token costs per token in proportion to the call's length).

    python -m benchmarks.tool_stream                       # every format, 500 and 8,000 tokens
    python -m benchmarks.tool_stream --formats hermes,qwen3_coder --tokens 500,2000,8000

Each format writes one call in its own markup with a string argument of N word tokens; the text
is fed as the engine streams it (one word per ``feed``; the markup in 3-character pieces) and the
parser's outputs are checked (one call, the argument complete). Reported: microseconds of CPU
(``time.process_time``) per fed piece, the best of ``--repeats`` runs, and the ratio of the
longest call's cost per token to the shortest's (the target is at most 2).
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from mlxcel.chat.stream_filter import ChatOutputParser
from mlxcel.chat.tool_formats import FORMAT_NAMES, load_format

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": "write_file", "parameters": {
        "type": "object",
        "properties": {"content": {"type": "string"}, "mode": {"type": "integer"}},
        "required": ["content"]}}},
]

# One call per format; ``{V}`` is the long string argument (``content``), ``{J}`` the same as a
# JSON string literal.
CALLS: dict[str, str] = {
    "hermes": '<tool_call>\n{"name": "write_file", "arguments": {"content": {J}, "mode": 2}}'
              "\n</tool_call>",
    "qwen3_coder": "<tool_call>\n<function=write_file>\n<parameter=content>\n{V}\n</parameter>\n"
                   "<parameter=mode>\n2\n</parameter>\n</function>\n</tool_call>",
    "mistral_nemo": '[TOOL_CALLS][{"name": "write_file", "arguments": {"content": {J}, '
                    '"mode": 2}}]',
    "mistral_bracketed": '[TOOL_CALLS]write_file[ARGS]{"content": {J}, "mode": 2}',
    "llama3": '{"name": "write_file", "parameters": {"content": {J}, "mode": 2}}',
    "generic_json": '{"name": "write_file", "arguments": {"content": {J}, "mode": 2}}',
    "pythonic": "<|tool_call_start|>[write_file(content={J}, mode=2)]<|tool_call_end|>",
    "functionary_v31": '<function=write_file>{"content": {J}, "mode": 2}</function>',
    "functionary_v32": '>>>write_file\n{"content": {J}, "mode": 2}',
    "command_r": 'Action: write_file\nAction Input: {"content": {J}, "mode": 2}',
    "granite": '<tool_call>[{"name": "write_file", "arguments": {"content": {J}, "mode": 2}}]',
    "gemma4": '<|tool_call>call:write_file{content:<|"|>{V}<|"|>,mode:2}<tool_call|>',
    "function_gemma": "<start_function_call>call:write_file{content:<escape>{V}<escape>,"
                      "mode:2}<end_function_call>",
    "kimi_k2": "<|tool_calls_section_begin|><|tool_call_begin|>functions.write_file:0"
               '<|tool_call_argument_begin|>{"content": {J}, "mode": 2}<|tool_call_end|>'
               "<|tool_calls_section_end|>",
    "minimax_m2": '<minimax:tool_call>\n<invoke name="write_file">\n<parameter name="content">{V}'
                  '</parameter>\n<parameter name="mode">2</parameter>\n</invoke>\n'
                  "</minimax:tool_call>",
    "minimax_m3": ']<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name="write_file">'
                  "]<]minimax[>[<content>{V}]<]minimax[>[</content>]<]minimax[>[<mode>2"
                  "]<]minimax[>[</mode>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>",
    "glm47": "<tool_call>write_file\n<arg_key>content</arg_key>\n<arg_value>{V}</arg_value>\n"
             "<arg_key>mode</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
    "longcat": "<longcat_tool_call>write_file\n<longcat_arg_key>content</longcat_arg_key>\n"
               "<longcat_arg_value>{V}</longcat_arg_value>\n<longcat_arg_key>mode"
               "</longcat_arg_key>\n<longcat_arg_value>2</longcat_arg_value>\n"
               "</longcat_tool_call>",
    "harmony": "<|channel|>commentary to=functions.write_file <|constrain|>json<|message|>"
               '{"content": {J}, "mode": 2}<|call|>',
}
WORDS = ("def", " main", "(", "):", " return", " value", " +", " 1", " if", " x", " else",
         " None", " for", " item", " in", " items", ".")


def pieces(name: str, tokens: int) -> tuple[list[str], str]:
    """The call as streamed pieces (the argument one word a piece), and the argument's text."""
    value = "".join(WORDS[i % len(WORDS)] for i in range(tokens))
    head, tail = CALLS[name].replace("{J}", "\x00J").replace("{V}", "\x00V").split("\x00")
    quoted = tail[0] == "J"
    out = [head[i:i + 3] for i in range(0, len(head), 3)]
    if quoted:
        out.append('"')
    out.extend(WORDS[i % len(WORDS)] for i in range(tokens))
    rest = ('"' if quoted else "") + tail[1:]
    out.extend(rest[i:i + 3] for i in range(0, len(rest), 3))
    return out, value


def run_once(name: str, chunks: list[str], value: str) -> float:
    parser = ChatOutputParser(tool_format=load_format(name), tools=TOOLS)
    start = time.process_time()
    for chunk in chunks:
        parser.feed(chunk)
    parser.finish()
    spent = time.process_time() - start
    calls = parser.calls
    if len(calls) != 1 or json.loads(calls[0].arguments).get("content") != value:
        raise SystemExit(f"{name}: the parser did not return the call ({calls[:1]!r:.200})")
    return spent


def measure(name: str, tokens: int, repeats: int) -> float:
    """Microseconds of CPU per streamed piece, best of ``repeats``."""
    chunks, value = pieces(name, tokens)
    best = min(run_once(name, chunks, value) for _ in range(repeats))
    return best / len(chunks) * 1e6


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--formats", default=",".join(FORMAT_NAMES))
    ap.add_argument("--tokens", default="500,8000", help="argument lengths in tokens")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    sizes = [int(n) for n in args.tokens.split(",")]
    print(f"{'format':<18}" + "".join(f"{f'{n} tok':>12}" for n in sizes) + f"{'ratio':>8}")
    worst = 0.0
    for name in args.formats.split(","):
        costs = [measure(name, n, args.repeats) for n in sizes]
        ratio = costs[-1] / costs[0]
        worst = max(worst, ratio)
        print(f"{name:<18}" + "".join(f"{c:>9.1f} us" for c in costs) + f"{ratio:>8.2f}")
    print(f"largest ratio {worst:.2f} (microseconds of CPU per streamed token)")


if __name__ == "__main__":
    main()
