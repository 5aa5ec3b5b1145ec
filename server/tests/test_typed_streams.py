"""The server's Responses and Anthropic event encoders, checked by the suite's own state
machines, and the streaming reasoning router against the whole-text split."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from mlxcel.chat.reasoning import split_reasoning
from mlxcel.protocol.anthropic_events import AnthropicEventEncoder, empty_block
from mlxcel.protocol.reasoning_stream import ReasoningRouter
from mlxcel.protocol.responses_events import ResponsesEventEncoder
from mlxcel.sse import named_event
from mlxcel_conformance.checks.anthropic_events import check_anthropic_stream
from mlxcel_conformance.checks.responses_events import check_responses_stream
from mlxcel_conformance.sse import parse_sse

RESPONSE = {"id": "resp_1", "object": "response", "status": "in_progress", "output": []}

# A model whose template uses <think>: all split_reasoning reads of it.
THINKING_MODEL = SimpleNamespace(chat_template="{{ '<think>' }}", tokenizer=None)


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
                             "name": "f", "arguments": "{}", "status": "completed"}))
    out += enc.arguments("{}")
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


@pytest.mark.parametrize("text", [
    "<think>\n2 plus 2 equals 4.\n</think>\n\nThe answer is 4.",
    "Hello! How can I help you today?", "  <thi nope", "<think>abc", "\n\nhi",
    "<think></think>x", "<th", "",
])
@pytest.mark.parametrize("opens", [False, True])
def test_router_splits_like_the_whole_text(text: str, opens: bool) -> None:
    rng = random.Random(7)
    for _ in range(20):
        router = ReasoningRouter(opens)
        segments = []
        position = 0
        while position < len(text):
            size = rng.randint(1, 4)
            segments += router.feed(text[position:position + size])
            position += size
        segments += router.finish()
        reasoning = [t for k, t in segments if k == "reasoning"]
        content = "".join(t for k, t in segments if k == "content")
        got = ("".join(reasoning) if reasoning else None, content)
        assert got == split_reasoning(THINKING_MODEL, text, opens)  # type: ignore[arg-type]
