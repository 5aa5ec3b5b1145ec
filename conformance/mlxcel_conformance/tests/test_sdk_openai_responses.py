"""Round trips with the official openai SDK's Responses client, strict response validation on:
create, stream() + get_final_response(), retrieve, delete, chaining, a function-call turn."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.checks.responses_events import STREAM_TEXT
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.sdk_clients import openai_client
from mlxcel_conformance.surfaces import require_response_store
from mlxcel_conformance.target import Target

WEATHER_TOOL: openai.types.responses.FunctionToolParam = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris."}},
        "required": ["city"],
    },
    "strict": False,
}


@pytest.fixture(scope="module")
def sdk_model(model_name: str | None) -> str:
    return model_name or "default_model"


@pytest.fixture
def suite(client: SuiteClient) -> SuiteClient:
    """The suite's own client (the tests' `client` is the SDK's), for the probes."""
    return client


@pytest.fixture(autouse=True)
def _responses_claimed(profile: Profile) -> None:
    if not profile.claims("responses"):
        pytest.skip(f"UNSUPPORTED: profile {profile.name} does not claim family responses")


def _client(target: Target) -> openai.OpenAI:
    return openai_client(target)


def _read(stream: Any) -> tuple[list[str], Any]:
    """(text deltas, final response) of a ``responses.stream()``. A stream that ends
    ``response.incomplete`` (the model reached ``max_output_tokens``, a valid end in Open
    Responses) carries its final response in that event; the SDK's ``get_final_response()``
    raises on it, which says nothing about the server, so it is read from the event."""
    deltas: list[str] = []
    last = None
    for event in stream:
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        last = event
    if last is not None and last.type == "response.incomplete":
        return deltas, last.response
    return deltas, stream.get_final_response()


def _finished(response: Any) -> bool:
    """Completed, or cut at the limit the request set (incomplete: max_output_tokens)."""
    details = response.incomplete_details
    return response.status == "completed" or (
        response.status == "incomplete" and details is not None
        and details.reason == "max_output_tokens")


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.responses.create")
def test_sdk_responses_create(target: Target, sdk_model: str) -> None:
    with _client(target) as client:
        created = client.responses.create(model=sdk_model, input="Say hello.",
                                          max_output_tokens=32, temperature=0)
    if created.usage is None or not created.output_text:
        fail("sdk_openai", "the created response has no text or no usage",
             created=created.model_dump())


# Retrieving, deleting and chaining need a server that keeps its Responses (optional: Open
# Responses defines creation only); each is its own feature, UNSUPPORTED on a stateless server.
@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.responses.retrieve_delete")
def test_sdk_responses_retrieve_delete(target: Target, sdk_model: str, suite: SuiteClient,
                                       model_name: str | None) -> None:
    require_response_store(suite, model_name)
    with _client(target) as client:
        created = client.responses.create(model=sdk_model, input="Say hello.",
                                          max_output_tokens=32, temperature=0)
        retrieved = client.responses.retrieve(created.id)
        client.responses.delete(created.id)
        try:
            client.responses.retrieve(created.id)
        except openai.NotFoundError:
            pass
        else:
            fail("sdk_openai", "a deleted response can still be retrieved", id=created.id)
    if created.usage is None or retrieved.output_text != created.output_text:
        fail("sdk_openai", "the retrieved response differs from the created one",
             created=created.model_dump(), retrieved=retrieved.model_dump())


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.responses.stream")
def test_sdk_responses_stream(target: Target, sdk_model: str) -> None:
    with _client(target) as client:
        with client.responses.stream(model=sdk_model, input="Count to five.",
                                     max_output_tokens=32, temperature=0) as stream:
            deltas, final = _read(stream)
        plain = client.responses.create(model=sdk_model, input="Count to five.",
                                        max_output_tokens=32, temperature=0)
    if "".join(deltas) != final.output_text or final.output_text != plain.output_text:
        fail("sdk_openai", "streamed deltas, final response and plain create disagree",
             deltas=deltas, final=final.output_text, plain=plain.output_text,
             defect=STREAM_TEXT if not deltas and final.output_text else None)


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.responses.chaining")
def test_sdk_responses_chaining(target: Target, sdk_model: str, suite: SuiteClient,
                                model_name: str | None) -> None:
    require_response_store(suite, model_name)
    with _client(target) as client:
        first = client.responses.create(model=sdk_model, input="Say hello.",
                                        max_output_tokens=32, temperature=0)
        second = client.responses.create(model=sdk_model, input="Count to five.",
                                         previous_response_id=first.id,
                                         max_output_tokens=32, temperature=0)
    assert first.usage is not None and second.usage is not None
    if second.previous_response_id != first.id or \
            second.usage.input_tokens <= first.usage.total_tokens:
        fail("sdk_openai", "the chained response did not continue the first",
             first=first.model_dump(), second=second.model_dump())


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.responses.function_call")
def test_sdk_responses_function_call_turn(target: Target, sdk_model: str) -> None:
    with _client(target) as client:
        with client.responses.stream(model=sdk_model, input="What is the weather in Paris?",
                                     tools=[WEATHER_TOOL], max_output_tokens=48,
                                     temperature=0) as stream:
            first = _read(stream)[1]
        calls = [item for item in first.output if item.type == "function_call"]
        if not calls:
            if target.self_started:  # the fixture model is trained to call get_weather here
                fail("sdk_openai", "no function_call from the tool-call fixture",
                     output=first.model_dump()["output"])
            pytest.skip("the model answered without calling the tool")
        call = calls[0]
        if call.name != "get_weather" or not isinstance(json.loads(call.arguments), dict):
            fail("sdk_openai", "malformed function_call", call=call.model_dump())
        result = {"type": "function_call_output", "call_id": call.call_id,
                  "output": json.dumps({"temperature": 21, "sky": "sunny"})}
        second = client.responses.create(model=sdk_model, previous_response_id=first.id,
                                         input=[result],  # type: ignore[list-item]
                                         tools=[WEATHER_TOOL], max_output_tokens=48,
                                         temperature=0)
    if not _finished(second) or not second.output:
        fail("sdk_openai", "the turn after the tool result did not complete",
             body=second.model_dump())
