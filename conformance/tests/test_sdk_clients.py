"""The SDK round trips' strict validation excuses only keys the real service does not send."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import pydantic
import pytest
import real_stream_corpus as corpus
from openai.types.responses import Response

from mlxcel_conformance.sdk_clients import UNRECORDED_REQUIRED, StrictOpenAI
from mlxcel_conformance.target import Target

RESPONSES = corpus.files("openai-responses/json/*.json")


def _keys(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {k for v in value.values() for k in _keys(v)}
    if isinstance(value, list):
        return {k for v in value for k in _keys(v)}
    return set()


def test_no_real_recording_carries_an_excused_key() -> None:
    every = {k for path in corpus.all_files() if path.suffix in (".json", ".sse")
             for k in _keys(_load(path))}
    assert not UNRECORDED_REQUIRED & every


def _load(path: Any) -> Any:
    text = corpus.read(path)
    if path.suffix == ".sse":
        return corpus.payloads(list(corpus.stream(path.name).events))
    return json.loads(text)


def _client(body: dict[str, Any]) -> openai.OpenAI:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    client = StrictOpenAI(base_url="http://replay/v1", api_key="k", max_retries=0,
                          _strict_response_validation=True,
                          http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    assert client._strict_response_validation
    return client


@pytest.mark.parametrize("path", RESPONSES, ids=corpus.ids(RESPONSES))
def test_the_real_responses_pass_the_sdk_round_trip(path: Any) -> None:
    body = json.loads(corpus.read(path))
    with pytest.raises(pydantic.ValidationError):  # plain strict validation rejects OpenAI
        Response.model_validate(body)
    created = _client(body).responses.create(model="m", input="hi")
    assert created.id == body["id"]


def test_a_missing_key_the_real_service_sends_still_fails() -> None:
    body = json.loads(corpus.read(RESPONSES[0]))
    del body["tools"]
    with pytest.raises(openai.APIResponseValidationError):
        _client(body).responses.create(model="m", input="hi")


def test_the_factory_is_strict() -> None:
    from mlxcel_conformance.sdk_clients import openai_client

    assert isinstance(openai_client(Target("http://x", None, None)), StrictOpenAI)


def test_an_sdk_failure_names_the_fields_it_refused() -> None:
    from mlxcel_conformance.plugin import _fields

    body = json.loads(corpus.read(RESPONSES[0]))
    del body["tools"]
    with pytest.raises(pydantic.ValidationError) as info:
        Response.model_validate(body)
    assert "tools: missing" in _fields(info.value)
    assert _fields(None) == ""


def test_an_sdk_failure_on_an_event_names_the_branch_its_type_names() -> None:
    from anthropic.types import RawMessageStreamEvent
    from openai.types.responses import ResponseStreamEvent

    from mlxcel_conformance.plugin import _fields

    start = {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather"}}
    with pytest.raises(pydantic.ValidationError) as info:
        pydantic.TypeAdapter(RawMessageStreamEvent).validate_python(start)
    assert len(info.value.errors()) > 8  # every other event and block kind refused it too
    assert _fields(info.value) == (
        " (RawContentBlockStartEvent.content_block.ToolUseBlock.input: missing)")

    body = json.loads(corpus.read(RESPONSES[0]))
    del body["tools"]
    body["usage"]["input_tokens_details"].pop("cache_write_tokens", None)
    completed = {"type": "response.completed", "sequence_number": 1, "response": body}
    with pytest.raises(pydantic.ValidationError) as info:
        pydantic.TypeAdapter(ResponseStreamEvent).validate_python(completed)
    assert _fields(info.value) == " (ResponseCompletedEvent.response.tools: missing)"


# The 2025-03 recording predates sequence_number, which today's service sends on every event.
STREAMS = [p for p in corpus.files("openai-responses/stream/*.sse") if "2025-03" not in p.name]


@pytest.mark.parametrize("path", STREAMS, ids=corpus.ids(STREAMS))
def test_the_real_responses_streams_pass_the_sdk_stream(path: Any) -> None:
    """A stream's events are a union: the excused keys are excused there too (the terminal
    event's Response lacks cache_write_tokens in every recording)."""
    text = corpus.read(path)

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text=text, headers={"content-type": "text/event-stream"})

    client = StrictOpenAI(base_url="http://replay/v1", api_key="k", max_retries=0,
                          _strict_response_validation=True,
                          http_client=httpx.Client(transport=httpx.MockTransport(answer)))
    with client.responses.stream(model="m", input="hi") as stream:
        kinds = [event.type for event in stream]
    assert kinds[-1] in ("response.completed", "response.incomplete")
