"""POST /v1/chat/completions: bodies, streams, limits, stops and seeds.

`chat.json.body` and `chat.stream.framing` judge the shape of a body and of a stream; the
behaviour features read their answers with `readers` and judge only their behaviour."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mlxcel_conformance.checks.engine_checks import check_stop_string_not_leaked
from mlxcel_conformance.checks.openai_common import check_no_usage_chunk, check_usage_chunk_last
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import (
    CHAT_PATH,
    chat_json,
    chat_payload,
    chat_stream,
    message_content,
)
from mlxcel_conformance.readers import read_chat, read_stream
from mlxcel_conformance.sse import iter_sse

pytestmark = pytest.mark.conformance(family="chat")

STORY = "Tell me a story."


@pytest.mark.conformance(family="chat", feature="chat.json.body")
def test_chat_json_body(client: SuiteClient, model_name: str | None) -> None:
    body = chat_json(client, chat_payload(model_name))
    assert body["choices"][0]["finish_reason"] in ("stop", "length")


@pytest.mark.conformance(family="chat", feature="chat.stream.framing")
def test_chat_stream_framing(client: SuiteClient, model_name: str | None) -> None:
    stream = chat_stream(client, chat_payload(model_name))
    check_no_usage_chunk(stream.chunks)


@pytest.mark.conformance(family="chat", feature="chat.stream.usage_chunk")
def test_chat_stream_usage_chunk_last(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, stream_options={"include_usage": True})
    # read strictly: the usage chunk is a chunk like any other ([DONE] after it, its object)
    stream = chat_stream(client, payload)
    usage = check_usage_chunk_last(stream.chunks)
    body = read_chat(client, chat_payload(model_name))
    if usage["prompt_tokens"] != (body.get("usage") or {}).get("prompt_tokens"):
        fail(
            "usage_chunk_last",
            "streamed prompt_tokens differ from the non-streamed count",
            streamed=usage,
            non_streamed=body.get("usage"),
        )


@pytest.mark.conformance(
    family="chat", feature="chat.stream.empty_stream_options", destructive=True
)
def test_chat_stream_empty_stream_options(client: SuiteClient, model_name: str | None) -> None:
    # read strictly: an empty stream_options still ends the stream with data: [DONE]
    stream = chat_stream(client, chat_payload(model_name, stream_options={}))
    check_no_usage_chunk(stream.chunks)
    read_chat(client, chat_payload(model_name))  # the server still serves afterwards


# max_completion_tokens (the current name) is its own feature: a server that ignores it still
# shows whether it honours max_tokens.
@pytest.mark.conformance(family="chat", feature="chat.max_tokens")
@pytest.mark.parametrize("field", ["max_tokens", pytest.param(
    "max_completion_tokens", marks=pytest.mark.conformance(
        family="chat", feature="chat.max_completion_tokens"))])
def test_chat_token_limit(client: SuiteClient, model_name: str | None, field: str) -> None:
    payload = chat_payload(model_name, STORY)
    payload.pop("max_tokens")
    payload[field] = 3
    # Streamed first, read only as far as the limit allows: a server that ignores the field
    # is found out at once, not by waiting for a story it lets run to its own default length.
    pieces = _pieces_until(client, {**payload, "stream": True}, PAST_LIMIT)
    if pieces >= PAST_LIMIT:
        fail("max_tokens_honoured", f"{field}=3: the stream went on past {PAST_LIMIT} text "
             "deltas (each carries at least one token), so the limit was not applied",
             ignored=True, ignored_field=field, deltas_read=pieces)
    body = read_chat(client, payload)
    reason = body["choices"][0].get("finish_reason")
    used = (body.get("usage") or {}).get("completion_tokens")
    if not isinstance(used, int) or used > 3 or (reason == "length" and used != 3):
        fail(
            "max_tokens_honoured",
            f"{field}=3 gave {used} completion tokens ({reason})",
            # more tokens than asked for: the limit was accepted and not honoured
            ignored=isinstance(used, int) and used > 3, ignored_field=field,
            usage=body.get("usage"),
            finish_reason=reason,
        )
    stream = read_stream(client, {**payload, "stream_options": {"include_usage": True}})
    if stream.finish_reasons() != [reason]:
        fail(
            "max_tokens_honoured",
            "the stream ended for a different reason than the body",
            streamed=stream.finish_reasons(),
            non_streamed=reason,
        )


# Text deltas read from a stream limited to 3 tokens before the limit is known to be ignored:
# every delta carries at least one token's text, and a server may split one token's text no
# more than a few ways (a multi-byte character held back), so 16 is far past 3 tokens.
PAST_LIMIT = 16


def _pieces_until(client: SuiteClient, payload: dict[str, Any], most: int) -> int:
    """The chunks with text a chat stream sends, counted up to ``most`` (then the stream is
    closed). Framing is judged by the stream features, not here."""
    pieces = 0
    with client.http.stream("POST", CHAT_PATH, json=payload) as response:
        if response.status_code != 200:
            return 0  # the full reads below judge the refusal
        for event in iter_sse(response.iter_text()):
            if event.data.strip() == "[DONE]":
                break
            try:
                chunk = json.loads(event.data)
            except ValueError:
                continue
            choices = chunk.get("choices") if isinstance(chunk, dict) else None
            delta = choices[0].get("delta") if choices and isinstance(choices[0], dict) else None
            if isinstance(delta, dict) and any(delta.get(k) for k in TEXT_KEYS):
                pieces += 1
                if pieces >= most:
                    break
    return pieces


TEXT_KEYS = ("content", "reasoning_content", "reasoning", "tool_calls")


def _stop_candidate(text: str) -> str | None:
    middle = len(text) // 2
    for start in range(middle, len(text) - 2):
        candidate = text[start : start + 3]
        if candidate.strip() == candidate and text.find(candidate) == start:
            return candidate
    return None


@pytest.mark.conformance(family="chat", feature="chat.stop.not_leaked")
def test_chat_stop_string_never_leaks(client: SuiteClient, model_name: str | None) -> None:
    base = chat_payload(model_name, STORY, max_tokens=24, seed=7)
    unstopped = read_chat(client, base)
    text = message_content(unstopped)
    stop = _stop_candidate(text)
    if stop is None:
        pytest.skip(f"the greedy reply {text!r} has no usable stop candidate")
    expected = text[: text.find(stop)]
    body = read_chat(client, {**base, "stop": [stop, "@@never@@"]})
    check_stop_string_not_leaked(message_content(body), stop, text)
    streamed = read_stream(client, {**base, "stop": stop})
    check_stop_string_not_leaked(streamed.content, stop, text)
    reasons = [body["choices"][0].get("finish_reason"), *streamed.finish_reasons()]
    if reasons != ["stop", "stop"]:
        fail("stop_not_leaked", f"a matched stop ended with finish_reason {reasons}",
             stop=stop, expected=expected)


# OpenAI's seed is best effort ("determinism is not guaranteed"), llama-server's and mlx-lm's
# only seed the RNG: the same text for the same seed is the reference's promise.
@pytest.mark.conformance(family="chat", feature="chat.seed.deterministic", extension="sampling")
def test_chat_same_seed_same_text(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, STORY, temperature=1.0, top_p=1.0, seed=1234, max_tokens=12)
    first, second = (message_content(read_chat(client, payload)) for _ in range(2))
    if first != second:
        fail("seed_deterministic", "the same seed gave different text", first=first, second=second)
