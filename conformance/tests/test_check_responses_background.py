"""The background-mode checks pass what they should and fail what they should: a queued
answer, a polled end, a cancel (and a second one), and a stream resumed after a sequence
number; a clean refusal of the mode is UNSUPPORTED, not a failure."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.responses_background import (
    check_cancel_again,
    check_cancelled,
    check_polled_final,
    check_queued,
    check_resume_exact,
    skip_unless_offered,
)
from mlxcel_conformance.errors import ConformanceFailure

QUEUED = {"id": "resp_1", "object": "response", "status": "queued", "background": True}
TEXT = [{"type": "message", "content": [{"type": "output_text", "text": "Hello"}]}]
EVENTS = [{"type": t, "sequence_number": n} for n, t in enumerate(
    ["response.created", "response.queued", "response.in_progress",
     "response.output_text.delta", "response.completed"])]


@pytest.mark.parametrize("status", ["queued", "in_progress"])
def test_a_queued_answer_passes(status: str) -> None:
    assert check_queued({**QUEUED, "status": status}) == "resp_1"


@pytest.mark.parametrize("body", [
    {**QUEUED, "background": False},  # the mode was ignored
    {**QUEUED, "status": "completed"},  # answered only once done
    {**QUEUED, "id": ""},
    {"error": {"message": "no"}},
    None,
])
def test_a_not_queued_answer_fails(body: Any) -> None:
    with pytest.raises(ConformanceFailure, match="background_queued"):
        check_queued(body)


@pytest.mark.parametrize("status", ["completed", "incomplete"])
def test_a_polled_end_with_output_passes(status: str) -> None:
    check_polled_final({**QUEUED, "status": status, "output": TEXT}, 1.0)


@pytest.mark.parametrize("body", [
    {**QUEUED, "status": "in_progress", "output": []},  # never ends
    {**QUEUED, "status": "failed", "output": []},
    {**QUEUED, "status": "completed", "output": []},  # nothing generated
    {**QUEUED, "status": "completed", "output": TEXT, "background": False},
])
def test_a_polled_end_that_is_wrong_fails(body: dict[str, Any]) -> None:
    with pytest.raises(ConformanceFailure, match="background_polled_final"):
        check_polled_final(body, 120.0)


def test_a_cancel_that_holds_passes() -> None:
    cancelled = {**QUEUED, "status": "cancelled"}
    check_cancelled(200, cancelled, cancelled)
    check_cancel_again(200, cancelled)


@pytest.mark.parametrize(("status", "answer", "polled"), [
    (400, {"error": {"message": "no"}}, {**QUEUED, "status": "completed"}),
    (200, {**QUEUED, "status": "cancelled"}, {**QUEUED, "status": "completed"}),  # kept going
    (200, {**QUEUED, "status": "in_progress"}, {**QUEUED, "status": "cancelled"}),
])
def test_a_cancel_that_does_not_hold_fails(status: int, answer: Any, polled: Any) -> None:
    with pytest.raises(ConformanceFailure, match="background_cancelled"):
        check_cancelled(status, answer, polled)


@pytest.mark.parametrize(("status", "answer"), [
    (400, {"error": {"message": "already cancelled"}}), (200, {**QUEUED, "status": "failed"})])
def test_a_second_cancel_that_is_not_idempotent_fails(status: int, answer: Any) -> None:
    with pytest.raises(ConformanceFailure, match="background_cancel_idempotent"):
        check_cancel_again(status, answer)


def test_a_resume_with_exactly_the_later_events_passes() -> None:
    check_resume_exact(EVENTS, EVENTS[3:], 2)
    check_resume_exact(EVENTS, [], 4)


@pytest.mark.parametrize("resumed", [
    EVENTS[2:],  # one event too many
    EVENTS[4:],  # one missing
    [EVENTS[4], EVENTS[3]],  # out of order
    [{**EVENTS[3], "delta": "changed"}, EVENTS[4]],
])
def test_a_resume_that_differs_fails(resumed: list[dict[str, Any]]) -> None:
    with pytest.raises(ConformanceFailure, match="background_resume_exact"):
        check_resume_exact(EVENTS, resumed, 2)


def test_events_without_sequence_numbers_cannot_be_resumed() -> None:
    with pytest.raises(ConformanceFailure, match="background_resume_exact"):
        check_resume_exact([{"type": "response.created"}], [], -1)


def test_a_clean_refusal_of_the_mode_is_unsupported() -> None:
    refusal = httpx.Response(400, json={"error": {
        "message": "background is not supported", "type": "invalid_request_error",
        "param": "background", "code": None}})
    with pytest.raises(pytest.skip.Exception, match="UNSUPPORTED"):
        skip_unless_offered(refusal)


def test_a_server_error_on_the_mode_fails() -> None:
    with pytest.raises(ConformanceFailure, match="http_status"):
        skip_unless_offered(httpx.Response(500, text="boom"))
