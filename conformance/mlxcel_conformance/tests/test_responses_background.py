"""OpenAI's Responses background mode (checks in ``checks/responses_background.py``): queued
at once and polled to a final status, cancelled (and only a background response can be),
refused without ``store``, and a stream resumed with ``starting_after``. A server that refuses
``background: true`` cleanly does not offer the mode: UNSUPPORTED."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import inconclusive
from mlxcel_conformance.checks.responses_background import (
    STARTED_STATUSES,
    check_cancel_again,
    check_cancelled,
    check_polled_final,
    check_queued,
    check_resume_exact,
    skip_unless_offered,
)
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import response_of
from mlxcel_conformance.flows_typed import RESPONSES_PATH, responses_payload
from mlxcel_conformance.readers import read_response
from mlxcel_conformance.sse import parse_sse
from mlxcel_conformance.surfaces import require_response_store

POLL_LIMIT_S = 120.0
CANCEL_LIMIT_S = 10.0
CANCEL_TRIES = 3


def _create(client: SuiteClient, payload: dict[str, Any]) -> dict[str, Any]:
    answer = client.post(RESPONSES_PATH, {**payload, "background": True})
    skip_unless_offered(answer)
    body: dict[str, Any] = json_body(answer)
    return body


def _poll(client: SuiteClient, response_id: str, limit_s: float) -> tuple[Any, float]:
    """GET until the status is final or ``limit_s`` passes: the last body, the seconds."""
    started = time.monotonic()
    while True:
        body = json_body(client.get(f"{RESPONSES_PATH}/{response_id}"))
        waited = time.monotonic() - started
        status = body.get("status") if isinstance(body, dict) else None
        if status not in STARTED_STATUSES or waited >= limit_s:
            return body, waited
        time.sleep(0.1)


def _events(text: str) -> list[dict[str, Any]]:
    return [json.loads(event.data) for event in parse_sse(text).events
            if event.data and event.data != "[DONE]"]


@pytest.mark.conformance(family="responses", feature="responses.background.poll")
def test_a_background_response_is_queued_then_polled_to_its_end(
        client: SuiteClient, model_name: str | None) -> None:
    require_response_store(client, model_name)
    created = _create(client, responses_payload(model_name, max_output_tokens=16))
    response_id = check_queued(created)
    body, waited = _poll(client, response_id, POLL_LIMIT_S)
    check_polled_final(body, waited)


@pytest.mark.conformance(family="responses", feature="responses.background.cancel")
def test_a_background_response_can_be_cancelled_twice(client: SuiteClient,
                                                       model_name: str | None) -> None:
    require_response_store(client, model_name)
    payload = responses_payload(model_name, "Tell me a very long story about a lighthouse.",
                                max_output_tokens=2000, temperature=1.0)
    # A small model can end its story at once: up to CANCEL_TRIES responses, until one is
    # still running when its cancel arrives.
    for _ in range(CANCEL_TRIES):
        response_id = check_queued(_create(client, payload))
        answer = client.post(f"{RESPONSES_PATH}/{response_id}/cancel")
        body = json_body(answer) if answer.status_code == 200 else answer.text
        if not (isinstance(body, dict) and body.get("status") in ("completed", "incomplete")):
            break
    else:
        inconclusive("background_cancelled", f"each of {CANCEL_TRIES} responses ended before "
                     "its cancel reached it")
    polled, _ = _poll(client, response_id, CANCEL_LIMIT_S)
    check_cancelled(answer.status_code, body, polled)
    again = client.post(f"{RESPONSES_PATH}/{response_id}/cancel")
    check_cancel_again(again.status_code, json_body(again))


@pytest.mark.conformance(family="responses", feature="responses.background.cancel_foreground")
def test_only_a_background_response_can_be_cancelled(client: SuiteClient,
                                                     model_name: str | None) -> None:
    require_response_store(client, model_name)
    _create(client, responses_payload(model_name, max_output_tokens=2))  # the mode is offered
    done = read_response(client, responses_payload(model_name, max_output_tokens=2))
    status, body = response_of(client.post(f"{RESPONSES_PATH}/{done['id']}/cancel"))
    check_error_body_openai(body, status=status, expected=400, case="cancel of a response "
                            "not created with background: true",
                            source="OpenAI API reference, Cancel a response: only responses "
                            "created with background: true can be cancelled "
                            "(https://platform.openai.com/docs/api-reference/responses/cancel)")


@pytest.mark.conformance(family="responses", feature="responses.background.needs_store")
def test_background_without_store_is_400(client: SuiteClient, model_name: str | None) -> None:
    payload = responses_payload(model_name, background=True, store=False)
    status, body = response_of(client.post(RESPONSES_PATH, payload))
    check_error_body_openai(body, status=status, expected=400, case="background without store",
                            source="OpenAI guide, Background mode: it needs store=true "
                            "(https://platform.openai.com/docs/guides/background)")


@pytest.mark.conformance(family="responses", feature="responses.background.resume")
def test_a_background_stream_resumes_after_starting_after(client: SuiteClient,
                                                          model_name: str | None) -> None:
    require_response_store(client, model_name)
    payload = responses_payload(model_name, max_output_tokens=16, background=True, stream=True)
    with client.http.stream("POST", RESPONSES_PATH, json=payload) as answer:
        answer.read()
    skip_unless_offered(answer)
    first = _events(answer.text)
    response_id = str(((first[0] if first else {}).get("response") or {}).get("id", ""))
    check_queued((first[0] if first else {}).get("response"))
    after = first[len(first) // 2].get("sequence_number")
    if not isinstance(after, int):
        check_resume_exact(first, [], -1)  # fails: the events carry no sequence_number
    resumed = client.get(f"{RESPONSES_PATH}/{response_id}",
                         params={"stream": "true", "starting_after": str(after)})
    expect_status(resumed, 200)
    check_resume_exact(first, _events(resumed.text), int(str(after)))
