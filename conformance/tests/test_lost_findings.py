"""The findings the suite once lost, each on a fake or recorded stream shaped like what the peer
sent (mlx-lm 0.32.2, llama-server at llama.cpp 0c1e570): strict stream reading, event order
beside schema findings, error.code's type, no 5xx for an image, and structured output judged
only on complete answers."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.chat_semantics import check_structured_output, json_starts
from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.field_parity import check_field_parity, openai_error_objects
from mlxcel_conformance.checks.vision import check_image_not_a_server_error
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.flows import chat_payload, chat_stream, completion_stream
from mlxcel_conformance.goldens import RAW, contract_diffs
from mlxcel_conformance.target import Target


def _sse(*payloads: Any, done: bool = True, named: bool = False) -> str:
    lines = []
    for payload in payloads:
        event = f"event: {payload['type']}\n" if named else ""
        lines.append(f"{event}data: {json.dumps(payload)}\n\n")
    return "".join(lines) + ("data: [DONE]\n\n" if done else "")


def _client(answer: Callable[[httpx.Request], httpx.Response]) -> SuiteClient:
    client = SuiteClient(Target("http://peer.test"))
    client.http = httpx.Client(base_url="http://peer.test",
                               transport=httpx.MockTransport(answer))
    return client


def _streaming(text: str) -> SuiteClient:
    return _client(lambda request: httpx.Response(
        200, headers={"content-type": "text/event-stream"}, content=text.encode()))


def _chunk(obj: str, choices: list[Any], **extra: Any) -> dict[str, Any]:
    return {"id": "cmpl-1", "object": obj, "created": 1, "model": "m", "choices": choices,
            **extra}


USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}


def test_a_missing_done_is_found_when_stream_options_is_empty() -> None:
    """mlx-lm: ``stream_options: {}`` raises on the missing include_usage after the last
    chunk, so the stream ends without ``data: [DONE]``."""
    text = _sse(_chunk("chat.completion.chunk", [{"index": 0, "delta": {"role": "assistant",
                                                                        "content": "Hi"},
                                                  "finish_reason": "stop", "logprobs": None}]),
                done=False)
    with pytest.raises(ConformanceFailure) as info:
        chat_stream(_streaming(text), chat_payload(None, stream_options={}))
    assert info.value.check == "done_terminator"


def test_a_completions_usage_chunk_is_held_to_text_completion() -> None:
    """mlx-lm's /v1/completions usage chunk says ``object: "chat.completion"``."""
    text = _sse(_chunk("text_completion", [{"index": 0, "text": "Paris", "logprobs": None,
                                            "finish_reason": "length"}]),
                _chunk("chat.completion", [], usage=USAGE))
    with pytest.raises(ConformanceFailure) as info:
        completion_stream(_streaming(text), {"prompt": "x", "max_tokens": 1,
                                             "stream_options": {"include_usage": True}})
    assert info.value.check in ("completion_chunk_order", "schema_conformance")
    assert "chat.completion" in json.dumps(info.value.to_dict())


def test_a_chat_usage_chunk_is_held_to_chat_completion_chunk() -> None:
    text = _sse(_chunk("chat.completion.chunk", [{"index": 0, "delta": {"role": "assistant",
                                                                        "content": "Hi"},
                                                  "finish_reason": "stop", "logprobs": None}]),
                _chunk("chat.completion", [], usage=USAGE))
    with pytest.raises(ConformanceFailure) as info:
        chat_stream(_streaming(text), chat_payload(None))
    assert "chat.completion" in json.dumps(info.value.to_dict())


def _interleaved_messages_stream() -> str:
    """llama-server's /v1/messages stream with thinking: block 1 starts before block 0 stops,
    and the thinking block carries no signature."""
    message: dict[str, Any] = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
               "content": [], "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": 3, "output_tokens": 0}}
    return _sse(
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "thinking_delta", "thinking": "hm"}},
        {"type": "content_block_start", "index": 1,
         "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": 2}},
        {"type": "message_stop"},
        done=False, named=True)


def test_event_order_is_reported_beside_a_schema_finding() -> None:
    got = {"status": 200, "content_type": "text/event-stream", RAW: _interleaved_messages_stream()}
    diffs = contract_diffs("POST", "/v1/messages", got)
    assert any(d.startswith("anthropic_event_order") for d in diffs), diffs
    assert any(d.startswith("event ") and "signature" in d for d in diffs), diffs


@pytest.mark.parametrize("code", [500, 400])
def test_error_code_is_a_string_or_null(code: int) -> None:
    """llama-server sends ``"code": 400``; openai-openapi's Error.code is a nullable string."""
    body = {"error": {"message": "bad", "type": "invalid_request_error", "param": None,
                      "code": code}}
    with pytest.raises(ConformanceFailure, match="not a string or null"):
        check_error_body_openai(body)
    with pytest.raises(ConformanceFailure):
        check_field_parity("error", openai_error_objects(body))
    check_error_body_openai({"error": {**body["error"], "code": None}})
    check_error_body_openai({"error": {**body["error"], "code": "invalid_value"}})


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/messages"])
def test_an_image_answered_500_fails_on_every_family(path: str) -> None:
    """llama-server answers 500 to an image on /v1/messages and /v1/responses."""
    with pytest.raises(ConformanceFailure) as info:
        check_image_not_a_server_error(path, 500, {"error": {"code": 500}})
    assert info.value.check == "no_server_error"
    check_image_not_a_server_error(path, 400, {"error": {"message": "no image input"}})


ANIMAL = {"type": "object", "properties": {"animal": {"type": "string"}},
          "required": ["animal"]}


def test_a_cut_answer_is_inconclusive_not_a_pass() -> None:
    with pytest.raises(pytest.skip.Exception, match="INCONCLUSIVE"):
        check_structured_output('{"animal": "c', ANIMAL, "length")
    assert check_structured_output('{"animal": "c', ANIMAL, "length", cut_allowed=True) is None


def test_a_cut_answer_that_is_not_json_is_an_ignored_response_format() -> None:
    """mlx-lm has no response_format: its cut answer is plain text, which no constrained
    decoder could have produced."""
    with pytest.raises(ConformanceFailure, match="IGNORED") as info:
        check_structured_output("Sure! A cat is a small", ANIMAL, "length")
    assert info.value.evidence["verdict_class"] == "IGNORED"


@pytest.mark.parametrize("cut", ["```", "```js", "```json\n", "```json\n{\"ani"])
def test_a_cut_answer_inside_a_json_fence_is_not_ignored(cut: str) -> None:
    """llama.cpp's chat parser admits an optional ```json fence before the schema's value
    (common/chat-auto-parser-generator.cpp): three tokens of it say nothing about the schema."""
    assert check_structured_output(cut, ANIMAL, "length", cut_allowed=True) is None


def test_a_fenced_answer_that_is_not_json_is_still_ignored() -> None:
    with pytest.raises(ConformanceFailure, match="IGNORED"):
        check_structured_output("```json\nSure! A cat", ANIMAL, "length", cut_allowed=True)


def test_json_starts() -> None:
    assert json_starts(ANIMAL) == "{"
    assert json_starts({"enum": ["a", 1, None]}) == '"1n'
    assert json_starts({"anyOf": [{"type": "string"}]}) is None
    assert json_starts({"type": ["integer", "null"]}) == "-0123456789n"


def test_a_complete_answer_breaking_the_schema_is_ignored() -> None:
    """mlx-lm's fixture answers its trained JSON whatever schema was asked for."""
    with pytest.raises(ConformanceFailure, match="IGNORED: the output breaks the schema"):
        check_structured_output('{"animal": "cat"}', {"type": "integer"}, "stop")
    assert check_structured_output('{"animal": "cat"}', ANIMAL, "stop") == {"animal": "cat"}
