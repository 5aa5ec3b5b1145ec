"""The server's Responses and Anthropic event encoders, checked by the suite's own state
machines; and each family's piece encoder, fed the output parser's pieces of a text cut at
random, gives the reasoning, text and calls the whole-text read gives (for ``<think>`` and
Harmony's channels)."""

from __future__ import annotations

import json
import random

import pytest

from mlxcel.chat.output import OutputSetup, read_output
from mlxcel.chat.reasoning import HARMONY, THINK, ReasoningMarkers
from mlxcel.chat.tool_formats import hermes
from mlxcel.families.anthropic.events import AnthropicEventEncoder, empty_block
from mlxcel.families.anthropic.pieces import AnthropicPieceEncoder
from mlxcel.families.responses.events import ResponsesEventEncoder
from mlxcel.families.responses.pieces import ResponsesPieceEncoder
from mlxcel.generation.pieces import Piece
from mlxcel.sse import named_event
from mlxcel_conformance.checks.anthropic_events import check_anthropic_stream
from mlxcel_conformance.checks.responses_events import check_responses_stream
from mlxcel_conformance.sse import parse_sse

RESPONSE = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}


def _events(payloads: list[dict]) -> list:
    return list(parse_sse("".join(named_event(p["type"], p) for p in payloads)).events)


def test_responses_encoder_passes_the_suite_state_machine() -> None:
    enc = ResponsesEventEncoder()
    out = [enc.response_event("response.created", RESPONSE),
           enc.response_event("response.in_progress", RESPONSE)]
    for kind, part, pieces in (("reasoning", "reasoning_text", ["a", "b"]),
                               ("message", "output_text", ["Hel", "lo"])):
        item = {"id": f"{kind}_1", "type": kind, "content": []}
        if kind == "message":
            item.update(role="assistant", status="in_progress")
        out.append(enc.add_item(item))
        out.append(enc.open_part(part))
        out += [enc.text_delta(part, p) for p in pieces]
        out += enc.close_part(part)
        out.append(enc.close_item())
    out.append(enc.add_item({"id": "fc_1", "type": "function_call", "call_id": "c",
                             "name": "f", "arguments": "", "status": "in_progress"}))
    out += [enc.arguments_delta("{"), enc.arguments_delta("}"), enc.arguments_done()]
    out.append(enc.close_item())
    done = {**RESPONSE, "status": "completed", "output": enc.output}
    out.append(enc.response_event("response.completed", done))
    stream = check_responses_stream(_events(out))
    assert stream.output_text == "Hello"
    assert [p["sequence_number"] for p in out] == list(range(len(out)))


def test_responses_encoder_refuses_out_of_order_events() -> None:
    enc = ResponsesEventEncoder()
    with pytest.raises(RuntimeError):
        enc.add_item({"id": "x", "type": "message"})


def test_anthropic_encoder_passes_the_suite_state_machine() -> None:
    enc = AnthropicEventEncoder()
    shell = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
             "content": [], "usage": {"input_tokens": 1, "output_tokens": 0}}
    out = [enc.start(shell), enc.ping(), enc.open_block(empty_block("thinking")),
           enc.delta("hmm"), enc.close_block(), enc.open_block(empty_block("text")),
           enc.delta("Hi"), enc.close_block(),
           enc.open_block(empty_block("tool_use", id="toolu_1", name="f")),
           enc.delta('{"a": 1}'), enc.close_block()]
    out += enc.finish("tool_use", None, {"input_tokens": 1, "output_tokens": 3})
    stream = check_anthropic_stream(_events(out))
    assert [b["type"] for b in stream.message["content"]] == ["thinking", "text", "tool_use"]
    assert stream.message["content"][2]["input"] == {"a": 1}
    assert enc.blocks[2]["input"] == {"a": 1}


WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
TEXTS = [
    "<think>\n2 plus 2 equals 4.\n</think>\n\nThe answer is 4.",
    "Hello! How can I help you today?", "  <thi nope", "<think>abc", "\n\nhi",
    "<think></think>x", "<th", "",
    "<|channel|>analysis<|message|>The user greets me.<|end|>"
    "<|start|>assistant<|channel|>final<|message|>Hello!",
    "<|channel|>final<|message|>Hi", "<|channel|>analysis<|message|>cut sho",
    f"<think>\nweather\n</think>\n\n{CALL}", f"Let me look.\n{CALL}",
    '<tool_call>\n{"name": "get_weather", "arguments": {"ci',
]


def _chunked(setup: OutputSetup, text: str, rng: random.Random) -> list[Piece]:
    parser = setup.new_parser()
    pieces: list[Piece] = []
    position = 0
    while position < len(text):
        size = rng.randint(1, 4)
        pieces += parser.feed(text[position:position + size])
        position += size
    return pieces + parser.finish()


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("markers", [THINK, HARMONY], ids=["think", "harmony"])
@pytest.mark.parametrize("opens", [False, True])
def test_family_encoders_stream_what_the_whole_text_reads(
    text: str, markers: ReasoningMarkers, opens: bool
) -> None:
    setup = OutputSetup(hermes.FORMAT, [WEATHER], markers, opens)
    whole = read_output(setup, text)
    rng = random.Random(7)
    for _ in range(10):
        pieces = _chunked(setup, text, rng)
        responses = ResponsesPieceEncoder(_open_response())
        list(responses.pieces(pieces))
        list(responses.finish("completed"))
        out = responses.enc.output
        reasoning = [i for i in out if i["type"] == "reasoning"]
        reasoning_text = "".join(p["text"] for i in reasoning for p in i["content"])
        assert (reasoning_text if reasoning else None) == whole.reasoning
        assert "".join(p["text"] for i in out if i["type"] == "message"
                       for p in i["content"]) == whole.content
        calls = [(i["name"], i["arguments"]) for i in out
                 if i["type"] == "function_call" and i["status"] == "completed"]
        assert calls == [(c.name, c.arguments) for c in whole.calls]
        anthropic = AnthropicPieceEncoder(_open_message(), with_thinking=True)
        list(anthropic.pieces(pieces))
        list(anthropic.finish())
        blocks = anthropic.enc.blocks
        thinking = [b["thinking"] for b in blocks if b["type"] == "thinking"]
        assert ("".join(thinking) if thinking else None) == whole.reasoning
        assert "".join(b["text"] for b in blocks if b["type"] == "text") == whole.content
        uses = [b["input"] for b in blocks if b["type"] == "tool_use" and b["input"]]
        assert uses == [json.loads(c.arguments) for c in whole.calls]


def _open_response() -> ResponsesEventEncoder:
    enc = ResponsesEventEncoder()
    enc.response_event("response.created", RESPONSE)
    enc.response_event("response.in_progress", RESPONSE)
    return enc


def _open_message() -> AnthropicEventEncoder:
    enc = AnthropicEventEncoder()
    enc.start({"id": "msg_1"})
    return enc
