"""POST /v1/responses and the stored-response routes: bodies, typed event streams, limits,
tools, chaining, the store, and the aliases without /v1.

`responses.json.body` and `responses.stream.event_order` judge the Response object and the event
stream; the behaviour features read their answers with `readers` and judge only their
behaviour."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks import sources
from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.checks.responses_events import CUT_ENDS_COMPLETED, STREAM_TEXT
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.defects import stream_adds_reasoning
from mlxcel_conformance.flows import check_schema, response_of
from mlxcel_conformance.flows_typed import (
    RESPONSES_PATH,
    output_text,
    responses_json,
    responses_payload,
    responses_stream,
)
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.readers import read_response, read_response_stream
from mlxcel_conformance.surfaces import require_response_store

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the current weather for a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "The city name, e.g. Paris."}},
        "required": ["city"],
    },
}


@pytest.mark.conformance(family="responses", feature="responses.json.body")
def test_responses_json_body(client: SuiteClient, model_name: str | None) -> None:
    body = responses_json(client, responses_payload(model_name))
    if body["status"] not in ("completed", "incomplete") or "usage" not in body:
        fail("response_body", "a finished response needs a final status and usage", body=body)


@pytest.mark.conformance(family="responses", feature="responses.stream.event_order")
def test_responses_stream_matches_body(client: SuiteClient, model_name: str | None,
                                       profile: Profile) -> None:
    payload = responses_payload(model_name, "Count to five.")
    stream = responses_stream(client, payload)
    # The stream against itself: its output_text deltas spell its own final response's text.
    final = output_text(stream.response)
    if stream.output_text != final:
        fail("responses_event_order", "the streamed output_text deltas do not spell the text "
             "of the stream's own final response", deltas=stream.output_text, final=final,
             defect=STREAM_TEXT)
    body = read_response(client, payload)
    kinds = [item.get("type") for item in stream.response.get("output") or []]
    plain = [item.get("type") for item in body["output"]]
    added = stream_adds_reasoning(kinds, plain)
    if added is not None:
        fail("responses_event_order", "the stream has a reasoning item the body lacks",
             streamed=kinds, non_streamed=plain, defect=added)
    # The same greedy text twice is the reference's promise, not the contract's. A real model
    # may use up max_output_tokens on "Count to five.": then both end incomplete (Open
    # Responses: status "incomplete"), which is as valid an end as completed.
    if profile.claims_extension("sampling") and (
            stream.response.get("status") != body.get("status") or final != output_text(body)):
        fail("stream_matches_json", "the greedy stream differs from the body",
             source=sources.GREEDY_REPEATS, streamed=final, non_streamed=output_text(body),
             terminal=stream.terminal, body_status=body.get("status"))


@pytest.mark.conformance(family="responses", feature="responses.stream.reasoning")
def test_responses_stream_reasoning(client: SuiteClient, model_name: str | None) -> None:
    payload = responses_payload(model_name, "What is 2 plus 2? Think first.", max_output_tokens=48)
    stream = read_response_stream(client, payload)
    body = read_response(client, payload)
    kinds = [item.get("type") for item in stream.response.get("output") or []]
    plain = [item.get("type") for item in body["output"]]
    if kinds != plain:
        fail("responses_event_order", "streamed and non-streamed output items differ",
             streamed=kinds, non_streamed=plain, defect=stream_adds_reasoning(kinds, plain))


@pytest.mark.conformance(family="responses", feature="responses.max_output_tokens")
def test_responses_incomplete(client: SuiteClient, model_name: str | None) -> None:
    payload = responses_payload(model_name, "Tell me a story.", max_output_tokens=4)
    body = read_response(client, payload)
    stream = read_response_stream(client, payload)
    for where, response in (("body", body), ("stream", stream.response)):
        details = response.get("incomplete_details") or {}
        if response.get("status") != "incomplete" or \
                details.get("reason") != "max_output_tokens":
            fail("response_body", f"{where}: a length stop must be incomplete/max_output_tokens",
                 response=response,
                 defect=CUT_ENDS_COMPLETED if response.get("status") == "completed" else None)
        if (response.get("usage") or {}).get("output_tokens") != 4:
            fail("response_body", f"{where}: max_output_tokens=4 not honoured",
                 usage=response.get("usage"))
    if stream.terminal != "response.incomplete":
        fail("responses_event_order", "a length stop must end with response.incomplete",
             terminal=stream.terminal,
             defect=CUT_ENDS_COMPLETED if stream.terminal == "response.completed" else None)


@pytest.mark.conformance(family="responses", feature="responses.tools.function_call")
def test_responses_function_tools(client: SuiteClient, model_name: str | None) -> None:
    payload = responses_payload(model_name, "What is the weather in Paris?",
                                tools=[WEATHER_TOOL], max_output_tokens=48)
    body = read_response(client, payload)
    stream = read_response_stream(client, payload)
    calls = [item for item in body["output"] if item.get("type") == "function_call"]
    streamed = [item for item in stream.response.get("output") or []
                if item.get("type") == "function_call"]
    if [c.get("name") for c in calls] != [c.get("name") for c in streamed]:
        fail("responses_event_order", "streamed and non-streamed function calls differ",
             streamed=streamed, non_streamed=calls)
    for call in calls:
        if call.get("name") != "get_weather":
            fail("response_body", f"function_call names undeclared tool {call['name']!r}",
                 item=call)


@pytest.mark.conformance(family="responses", feature="responses.input.items")
def test_responses_item_inputs(client: SuiteClient, model_name: str | None) -> None:
    first = read_response(client, responses_payload(model_name, "Say hello."))
    replay = [
        {"role": "developer", "content": "Be terse."},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Say hello."}]},
        *[item for item in first["output"] if item.get("type") == "message"],
        {"role": "user", "content": "Count to five."},
    ]
    read_response(client, responses_payload(model_name, replay))


@pytest.mark.conformance(family="responses", feature="responses.previous_response_id")
def test_responses_chaining(client: SuiteClient, model_name: str | None) -> None:
    require_response_store(client, model_name)
    first = read_response(client, responses_payload(model_name, "Say hello."))
    second = read_response(client, responses_payload(
        model_name, "Count to five.", previous_response_id=first.get("id")))
    if second.get("previous_response_id") != first.get("id"):
        fail("response_body", "previous_response_id is not echoed", body=second)
    if _tokens(second, "input_tokens") <= _tokens(first, "total_tokens"):
        fail("response_body", "the chained request did not include the earlier turn",
             first=first["usage"], second=second["usage"])


@pytest.mark.conformance(family="responses", feature="responses.conversation",
                         extension="conversations")
def test_responses_conversation(client: SuiteClient, model_name: str | None) -> None:
    """The reference keeps a conversation under any string id it is first given; OpenAI's
    `conversation` names one created beforehand with the Conversations API."""
    conversation = f"conv_suite_{id(client)}_{model_name}"
    first = read_response(client, responses_payload(model_name, conversation=conversation))
    second = read_response(client, responses_payload(model_name, "Count to five.",
                                                     conversation=conversation))
    if _tokens(second, "input_tokens") <= _tokens(first, "total_tokens"):
        fail("response_body", "the conversation did not carry the earlier turn",
             first=first["usage"], second=second["usage"])


@pytest.mark.conformance(family="responses", feature="responses.store.retrieve_delete")
@pytest.mark.parametrize("prefix", ["/v1", pytest.param("", marks=pytest.mark.conformance(
    family="responses", feature="responses.store.retrieve_delete.alias", extension="aliases"))])
def test_responses_retrieve_delete(client: SuiteClient, model_name: str | None,
                                   prefix: str) -> None:
    require_response_store(client, model_name)
    created = read_response(client, responses_payload(model_name), f"{prefix}/responses")
    path = f"{prefix}/responses/{created.get('id')}"
    got = client.get(path)
    expect_status(got, 200)
    body = json_body(got)
    if not isinstance(body, dict) or body.get("id") != created.get("id") or \
            output_text(body) != output_text(created):
        fail("response_body", "the retrieved response differs from the created one",
             created=created, retrieved=body)
    deleted = client.http.delete(path)
    expect_status(deleted, 200)
    if json_body(deleted) != {"id": created["id"], "object": "response.deleted",
                              "deleted": True}:
        fail("response_body", "DELETE must answer {id, object: response.deleted, deleted: true}",
             body=deleted.text)
    status, error = response_of(client.get(path))
    check_error_body_openai(error, status=status, expected=404)


@pytest.mark.conformance(family="responses", feature="responses.store.false")
def test_responses_store_false(client: SuiteClient, model_name: str | None) -> None:
    require_response_store(client, model_name)
    created = read_response(client, responses_payload(model_name, store=False))
    status, error = response_of(client.get(f"{RESPONSES_PATH}/{created.get('id')}"))
    check_error_body_openai(error, status=status, expected=404)


@pytest.mark.conformance(family="responses", feature="responses.input_tokens")
def test_responses_input_tokens(client: SuiteClient, model_name: str | None) -> None:
    payload = responses_payload(model_name, instructions="Be terse.")
    counted = client.post(f"{RESPONSES_PATH}/input_tokens", payload)
    if counted.status_code == 404:
        pytest.skip("UNSUPPORTED: the server does not serve /v1/responses/input_tokens")
    expect_status(counted, 200)
    count = json_body(counted)
    check_schema("POST", "/v1/responses/input_tokens", 200, count)
    body = read_response(client, payload)
    if count.get("input_tokens") != _tokens(body, "input_tokens"):
        fail("response_body", "input_tokens differs from the response's usage.input_tokens",
             counted=count, usage=body.get("usage"))


@pytest.mark.conformance(family="responses", feature="responses.seed", destructive=True)
@pytest.mark.parametrize("seed", [-2147483647, 2**70])
def test_responses_any_integer_seed(client: SuiteClient, model_name: str | None,
                                    seed: int) -> None:
    """JSON integers are unbounded: a negative or huge seed is a seed, not a 500."""
    read_response(client, responses_payload(model_name, seed=seed, temperature=1.0))


def _tokens(body: dict[str, Any], key: str) -> int:
    """A usage count a behaviour compares; a Response without it cannot show the behaviour."""
    value = (body.get("usage") or {}).get(key)
    if not isinstance(value, int):
        fail("response_body", f"the Response carries no usage.{key} to compare",
             usage=body.get("usage"))
    return value
