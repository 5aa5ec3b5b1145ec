"""POST /v1/completions: bodies, streams, prompt forms, and bad input."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks import sources
from mlxcel_conformance.checks.contract_edges import skip_documented
from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.openai_common import check_usage_chunk_last
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import (
    COMPLETIONS_PATH,
    completion_json,
    completion_payload,
    completion_stream,
    response_of,
    with_model,
)
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.readers import read_chat, read_stream


@pytest.mark.conformance(family="completions", feature="completions.json.body")
def test_completion_json_body(client: SuiteClient, model_name: str | None) -> None:
    body = completion_json(client, completion_payload(model_name))
    if body["usage"]["completion_tokens"] > 16:
        fail("max_tokens_honoured", "more completion tokens than max_tokens", usage=body["usage"])


@pytest.mark.conformance(family="completions", feature="completions.stream.framing")
def test_completion_stream_framing(client: SuiteClient, model_name: str | None) -> None:
    """Framing, [DONE] and chunk order. Unlike a chat chunk's `usage` ("only present when you
    set stream_options include_usage"), a completion chunk's is documented without that
    condition, so usage on a chunk nobody asked for is no fault here."""
    completion_stream(client, completion_payload(model_name))


@pytest.mark.conformance(family="completions", feature="completions.stream.usage_chunk")
def test_completion_stream_usage_chunk(client: SuiteClient, model_name: str | None) -> None:
    payload = completion_payload(model_name, stream_options={"include_usage": True})
    # read strictly: the usage chunk is a text_completion chunk like any other
    check_usage_chunk_last(completion_stream(client, payload).chunks)


# sources.GREEDY_REPEATS: the reference's promise on /v1/completions (llama-server's README
# makes it for its own /completion only, judged in test_llama_native).
@pytest.mark.conformance(family="completions", feature="completions.stream.matches_json",
                         extension="sampling")
def test_completion_stream_text_matches_json(client: SuiteClient, model_name: str | None) -> None:
    payload = completion_payload(model_name, max_tokens=12, cache_prompt=False)
    body = read_chat(client, payload, COMPLETIONS_PATH)
    stream = read_stream(client, payload, COMPLETIONS_PATH)
    if stream.content != body["choices"][0]["text"]:
        fail(
            "stream_matches_json",
            "greedy stream text differs from the JSON text",
            source=sources.GREEDY_REPEATS,
            streamed=stream.content,
            non_streamed=body["choices"][0]["text"],
        )


@pytest.mark.conformance(
    family="completions", feature="completions.prompt.list_of_one", destructive=True
)
def test_completion_prompt_list_of_one_string(client: SuiteClient, model_name: str | None) -> None:
    text = read_chat(client, completion_payload(model_name), COMPLETIONS_PATH)["choices"][0]["text"]
    listed = read_chat(client, completion_payload(model_name, ["The capital of France is"]),
                       COMPLETIONS_PATH)
    if listed["choices"][0]["text"] != text:
        fail(
            "prompt_forms",
            "prompt ['x'] and prompt 'x' gave different greedy text",
            string_prompt=text,
            list_prompt=listed["choices"][0]["text"],
        )
    read_chat(client, completion_payload(model_name), COMPLETIONS_PATH)  # still serving


BAD_BODIES: dict[str, Any] = {
    "prompt_missing": {"max_tokens": 4},
    "prompt_object": {"prompt": {"text": "hi"}, "max_tokens": 4},
    "prompt_number": {"prompt": 3.5, "max_tokens": 4},
    "max_tokens_negative": {"prompt": "hi", "max_tokens": -1},
    "top_p_string": {"prompt": "hi", "top_p": "most", "max_tokens": 4},
}


@pytest.mark.conformance(
    family="completions", feature="completions.errors.invalid_body", destructive=True
)
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_completion_invalid_body_is_400(
    client: SuiteClient, model_name: str | None, case: str, profile: Profile
) -> None:
    if case == "max_tokens_negative":
        skip_documented(profile, "max_tokens=-1")
    payload = with_model(model_name, BAD_BODIES[case])
    status, body = response_of(client.post(COMPLETIONS_PATH, payload))
    check_error_body_openai(body, status=status, expected=400, case=case,
        source="OpenAI API reference, Completions request body; Error codes: 400")
    read_chat(client, completion_payload(model_name, max_tokens=2), COMPLETIONS_PATH)
