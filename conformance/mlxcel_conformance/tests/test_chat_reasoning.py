"""Reasoning on /v1/chat/completions: `<think>` split into reasoning_content (body and
stream), reasoning_only, and chat_template_kwargs in each request shape."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.chat_semantics import check_reasoning_split, reasoning_field
from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import (
    CHAT_PATH,
    answer_json,
    chat_payload,
    chat_stream,
    check_answer_shape,
    response_of,
)

THINK = "What is 2 plus 2? Think first."


def _reasoned(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if reasoning_field(message) is None and "<think>" not in content:
        pytest.skip("the model did not reason")
    return check_reasoning_split(message)


@pytest.mark.conformance(family="chat", feature="chat.reasoning.split")
def test_reasoning_split_body_and_stream(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, THINK, max_tokens=48)
    body = answer_json(client, payload)
    message = body["choices"][0]["message"]
    reasoning = _reasoned(message)
    stream = chat_stream(client, payload)
    deltas = [c.get("delta") or {} for chunk in stream.chunks for c in chunk.get("choices") or []]
    field = reasoning_field(message) or "reasoning_content"
    streamed = "".join(d.get(field) or "" for d in deltas)
    if streamed != reasoning or stream.content != (message.get("content") or ""):
        fail("reasoning_split", "the stream splits reasoning differently from the body",
             streamed_reasoning=streamed, body_reasoning=reasoning,
             streamed_content=stream.content, body_content=message.get("content"))
    check_answer_shape(body)


@pytest.mark.conformance(family="chat", feature="chat.reasoning.only", extension="reasoning_only")
def test_reasoning_only_when_cut_in_thought(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, THINK, max_tokens=4)
    body = answer_json(client, payload)
    choice = body["choices"][0]
    message = choice["message"]
    if not message.get("reasoning_content"):
        pytest.skip("the model did not start with reasoning")
    if message.get("content") or choice["finish_reason"] != "length":
        pytest.skip("the model left its reasoning within 4 tokens")
    if message.get("reasoning_only") is not True:
        fail("reasoning_split", "reasoning used up max_tokens but reasoning_only is not true",
             answer=message)
    stream = chat_stream(client, payload)
    last = [c for chunk in stream.chunks for c in chunk.get("choices") or []][-1]
    if last["delta"].get("reasoning_only") is not True:
        fail("reasoning_split", "the finish chunk lacks reasoning_only", chunk=last)
    plain = answer_json(client, chat_payload(model_name, "Say hello."))["choices"][0]["message"]
    if "reasoning_only" in plain:
        fail("reasoning_split", "reasoning_only on an answer with content", answer=plain)


# The SDKs merge `extra_body` into the top level and never send that key; the reference also
# reads a literal `extra_body` object (its own extension).
KWARG_SHAPES: dict[str, dict[str, Any]] = {
    "top_level": {"chat_template_kwargs": {"enable_thinking": False}},
}
EXTRA_BODY_SHAPES: dict[str, dict[str, Any]] = {
    "extra_body": {"extra_body": {"chat_template_kwargs": {"enable_thinking": False}}},
    "top_level_wins": {"chat_template_kwargs": {"enable_thinking": False},
                       "extra_body": {"chat_template_kwargs": {"enable_thinking": True}}},
}


@pytest.mark.conformance(family="chat", feature="chat.template_kwargs")
@pytest.mark.parametrize("shape", sorted(KWARG_SHAPES))
def test_template_kwargs_shapes(client: SuiteClient, model_name: str | None, shape: str) -> None:
    """Qwen3 templates close the reasoning block in the prompt when enable_thinking is false:
    the prompt grows by those tokens (llama-server README, chat_template_kwargs)."""
    _check_kwarg_shape(client, model_name, KWARG_SHAPES[shape], shape)


@pytest.mark.conformance(family="chat", feature="chat.template_kwargs.extra_body",
                         extension="extra_body")
@pytest.mark.parametrize("shape", sorted(EXTRA_BODY_SHAPES))
def test_template_kwargs_in_literal_extra_body(client: SuiteClient, model_name: str | None,
                                               shape: str) -> None:
    _check_kwarg_shape(client, model_name, EXTRA_BODY_SHAPES[shape], shape)


def _check_kwarg_shape(client: SuiteClient, model_name: str | None, fields: dict[str, Any],
                       shape: str) -> None:
    base = chat_payload(model_name, THINK, max_tokens=1)
    plain = answer_json(client, base)["usage"]["prompt_tokens"]
    off = answer_json(client, {**base, **fields})["usage"]["prompt_tokens"]
    on = answer_json(client, {**base, "chat_template_kwargs": {"enable_thinking": True}})
    if on["usage"]["prompt_tokens"] != plain:
        pytest.skip("enable_thinking true changes this template's prompt")
    top = answer_json(client, {**base, **KWARG_SHAPES["top_level"]})["usage"]["prompt_tokens"]
    if top == plain:
        # Only when even the primary (top-level) shape changes nothing can the template be
        # said to ignore the kwarg; otherwise a shape that changes nothing was not honoured.
        pytest.skip("this template ignores enable_thinking")
    # all shapes that say false must give the same prompt as the top-level false
    if off != top:
        fail("template_kwargs", f"shape {shape} rendered a different prompt",
             prompt_tokens=off, expected=top)


@pytest.mark.conformance(family="chat", feature="chat.template_kwargs.errors",
                         extension="refusals")
def test_template_kwargs_not_object(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, chat_template_kwargs="enable_thinking")
    status, body = response_of(client.post(CHAT_PATH, payload))
    check_error_body_openai(body, status=status, expected=400)
