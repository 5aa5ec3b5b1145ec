"""What a Responses server keeps: the final status of a stored stream its client left, stored
responses and conversations across a hard restart, and OpenAI's documented bounds on the
request fields a response stores (checks in ``checks/responses_store.py``)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.checks.responses_store import (
    PAST_THE_BOUNDS,
    SAFETY_IDENTIFIER_CHARS,
    check_cancelled_promptly,
    check_final_after_disconnect,
    check_no_server_error,
    check_refused,
    check_survives_restart,
    check_within_limits,
    metadata_at_the_bounds,
)
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import CHAT_PATH, chat_payload
from mlxcel_conformance.flows_typed import RESPONSES_PATH, responses_payload
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.readers import read_response
from mlxcel_conformance.server_restart import pid_restart
from mlxcel_conformance.surfaces import require_response_store
from mlxcel_conformance.target import Target

# A server that goes on generating after its client left may take this long to finish the
# 64 tokens asked for; one that never ends the response fails.
FINAL_WAIT_S = 60.0
CANCEL_BOUND_S = 1.0


def _leave_mid_stream(client: SuiteClient, payload: dict[str, Any], deltas: int) -> str:
    """Open a stored stream, read ``deltas`` text deltas, close the connection; the id."""
    response_id, seen = "", 0
    with client.http.stream("POST", RESPONSES_PATH, json={**payload, "stream": True}) as answer:
        expect_status(answer, 200)
        for line in answer.iter_lines():
            if not line.startswith("data:"):
                continue
            try:
                event = json.loads(line[5:])
            except json.JSONDecodeError:
                continue
            if event.get("type") == "response.created":
                response_id = str((event.get("response") or {}).get("id", ""))
            seen += event.get("type") == "response.output_text.delta"
            if seen >= deltas:
                break
    if not response_id:
        fail("responses_event_order", "the stream named no response id before its text",
             deltas_read=seen)
    return response_id


def _poll_final(client: SuiteClient, response_id: str, limit_s: float) -> tuple[Any, float]:
    """GET the response until its status is no longer in_progress/queued or ``limit_s``
    passes: the last body and the seconds since the client left."""
    left = time.monotonic()
    while True:
        body = json_body(client.get(f"{RESPONSES_PATH}/{response_id}"))
        waited = time.monotonic() - left
        status = body.get("status") if isinstance(body, dict) else None
        if status not in ("in_progress", "queued") or waited >= limit_s:
            return body, waited
        time.sleep(0.05)


@pytest.mark.conformance(family="responses", feature="responses.disconnect.final_state",
                         destructive="last")
def test_a_stored_stream_left_by_its_client_ends(client: SuiteClient,
                                                 model_name: str | None) -> None:
    require_response_store(client, model_name)
    payload = responses_payload(model_name, "Tell me a long story about a lighthouse.",
                                max_output_tokens=64, temperature=1.0, seed=3)
    response_id = _leave_mid_stream(client, payload, deltas=3)
    body, waited = _poll_final(client, response_id, FINAL_WAIT_S)
    check_final_after_disconnect(body, waited)


@pytest.mark.conformance(family="responses", feature="responses.disconnect.cancelled_promptly",
                         extension="disconnect_cancel", destructive="last")
def test_a_stored_stream_left_by_its_client_is_cancelled_at_once(
        client: SuiteClient, model_name: str | None) -> None:
    require_response_store(client, model_name)
    payload = responses_payload(model_name, "Tell me a long story about a lighthouse.",
                                max_output_tokens=1000, temperature=1.0, seed=3,
                                ignore_eos=True)  # still generating when the client leaves
    response_id = _leave_mid_stream(client, payload, deltas=3)
    body, waited = _poll_final(client, response_id, CANCEL_BOUND_S * 3)
    check_cancelled_promptly(body, waited, CANCEL_BOUND_S)


def _input_tokens(client: SuiteClient, payload: dict[str, Any]) -> int | str:
    """The prompt a follow-up would continue, counted; the error when it is refused (a
    previous_response_id the server lost is a 400)."""
    answer = client.post(f"{RESPONSES_PATH}/input_tokens", payload)
    counted = json_body(answer).get("input_tokens") if answer.status_code == 200 else None
    return counted if isinstance(counted, int) else f"HTTP {answer.status_code}"


def _restart_of(target: Target, config: pytest.Config) -> Any:
    if config.getoption("--robustness"):
        pytest.skip("UNSUPPORTED with --robustness: its memory watch follows one process")
    if target.restart is not None:
        return target.restart
    pid = config.getoption("--server-pid")
    restart = pid_restart(target.base_url, pid) if pid else None
    if restart is None:
        pytest.skip("UNSUPPORTED: a hard restart needs the self-started server or --server-pid "
                    "of a local process whose command /proc shows")
    return restart


@pytest.mark.conformance(family="responses", feature="responses.store.survives_restart",
                         extension="durable_store", destructive="last")
def test_the_store_survives_a_hard_restart(client: SuiteClient, model_name: str | None,
                                           target: Target, profile: Profile,
                                           pytestconfig: pytest.Config) -> None:
    require_response_store(client, model_name)
    restart = _restart_of(target, pytestconfig)
    created = read_response(client, responses_payload(model_name, max_output_tokens=8))
    follow_ups = [responses_payload(model_name, "And then?", previous_response_id=created["id"])]
    if profile.claims_extension("conversations"):
        conversation = f"conv_suite_{uuid.uuid4().hex}"
        read_response(client, responses_payload(model_name, "My name is Ada.",
                                                conversation=conversation, max_output_tokens=4))
        follow_ups.append(responses_payload(model_name, "What is my name?",
                                            conversation=conversation))
    before = tuple(_input_tokens(client, p) for p in follow_ups)
    if not all(isinstance(count, int) for count in before):
        pytest.skip(f"UNSUPPORTED: /v1/responses/input_tokens does not count these ({before})")
    target.pid = restart()
    after = client.get(f"{RESPONSES_PATH}/{created['id']}")
    body = json_body(after) if after.status_code == 200 else {"status_code": after.status_code}
    check_survives_restart(created, body, before,
                           tuple(_input_tokens(client, p) for p in follow_ups))


# -- field bounds, on every route that accepts the fields --------------------------------------

ROUTES = {
    "responses": (RESPONSES_PATH, lambda model, **f: responses_payload(model, max_output_tokens=4,
                                                                       **f)),
    "chat": (CHAT_PATH, lambda model, **f: chat_payload(model, max_tokens=4, **f)),
}
CASES = [pytest.param(field, value, id=f"{field}-{i}")
         for i, (field, value) in enumerate(PAST_THE_BOUNDS)]


def _post(client: SuiteClient, family: str, model: str | None, fields: dict[str, Any],
          ) -> httpx.Response:
    path, payload = ROUTES[family]
    if family == "chat":
        fields = {k: v for k, v in fields.items() if k != "top_logprobs"}  # chat's own, 0-20
    return client.post(path, payload(model, **fields))


@pytest.mark.conformance(family="responses", feature="responses.field_limits.within")
def test_responses_fields_at_their_bounds(client: SuiteClient, model_name: str | None) -> None:
    sent = {"metadata": metadata_at_the_bounds(),
            "safety_identifier": "s" * SAFETY_IDENTIFIER_CHARS}
    answer = _post(client, "responses", model_name, sent)
    check_within_limits(answer.status_code, json_body(answer), sent)


@pytest.mark.conformance(family="chat", feature="chat.field_limits.within")
def test_chat_fields_at_their_bounds(client: SuiteClient, model_name: str | None) -> None:
    sent = {"metadata": metadata_at_the_bounds(),
            "safety_identifier": "s" * SAFETY_IDENTIFIER_CHARS}
    answer = _post(client, "chat", model_name, sent)
    check_within_limits(answer.status_code, json_body(answer), {})


@pytest.mark.conformance(family="responses", feature="responses.field_limits.no_server_error")
@pytest.mark.parametrize(("field", "value"), CASES)
def test_responses_fields_past_their_bounds_fail_no_server(
        client: SuiteClient, model_name: str | None, field: str, value: Any) -> None:
    check_no_server_error(_post(client, "responses", model_name, {field: value}).status_code,
                          field)


@pytest.mark.conformance(family="responses", feature="responses.field_limits.refused",
                         extension="field_limits")
@pytest.mark.parametrize(("field", "value"), CASES)
def test_responses_fields_past_their_bounds_are_refused(
        client: SuiteClient, model_name: str | None, field: str, value: Any) -> None:
    answer = _post(client, "responses", model_name, {field: value})
    check_refused(answer.status_code, json_body(answer), field)


@pytest.mark.conformance(family="chat", feature="chat.field_limits.refused",
                         extension="field_limits")
@pytest.mark.parametrize(("field", "value"),
                         [c for c in CASES if c.values[0] != "top_logprobs"])
def test_chat_fields_past_their_bounds_are_refused(
        client: SuiteClient, model_name: str | None, field: str, value: Any) -> None:
    answer = _post(client, "chat", model_name, {field: value})
    check_refused(answer.status_code, json_body(answer), field)
