"""Checks of OpenAI's Responses background mode (https://platform.openai.com/docs/guides/background;
API reference, Responses: "Create a model response" ``background``, "Retrieve a model response"
``stream`` and ``starting_after``, "Cancel a response"):

- ``background: true`` answers at once with the Response ``queued`` (or ``in_progress``) and
  ``background: true``; polling it by id reaches a final status with its output;
- a queued or generating background response can be cancelled: it then reads ``cancelled``;
  only background responses can be cancelled (any other is a 400);
- background mode needs ``store`` (``store: false`` is a 400);
- ``GET /v1/responses/{id}?stream=true&starting_after=N`` streams exactly the events after
  sequence number N, as the first stream sent them.

A server that refuses ``background: true`` cleanly (a 4xx in the OpenAI shape) does not offer
the mode: its tests are UNSUPPORTED, not failed.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.checks.verdict_policy import DEFAULT_VERDICTS, VerdictClass
from mlxcel_conformance.client import expect_status

STARTED_STATUSES = frozenset({"queued", "in_progress"})
FINAL_STATUSES = frozenset({"completed", "incomplete", "cancelled", "failed"})


def skip_unless_offered(answer: httpx.Response) -> None:
    """Skip as UNSUPPORTED where the server refuses background mode in OpenAI's error shape;
    anything but that or a 200 fails."""
    if 400 <= answer.status_code < 500:
        try:
            body: Any = answer.json()
        except ValueError:
            body = answer.text
        error = check_error_body_openai(body, status=answer.status_code,
                                        expected=answer.status_code)
        pytest.skip(f"UNSUPPORTED: the server refuses background: true (HTTP "
                    f"{answer.status_code}: {str(error.get('message'))[:120]})")
    expect_status(answer, 200)


@check("background_queued")
def check_queued(body: Any) -> str:
    """The create call's answer: a Response with ``background: true`` that is not yet done;
    its id."""
    if not isinstance(body, dict) or body.get("object") != "response":
        fail("background_queued", "the answer to background: true is not a Response object",
             body=body)
    if body.get("background") is not True:
        fail("background_queued", "the Response does not say background: true: the request's "
             "background mode was ignored", background=body.get("background"))
    if body.get("status") not in STARTED_STATUSES:
        fail("background_queued", f"a background response answers at once, queued or "
             f"in_progress; this one reads {body.get('status')!r}", status=body.get("status"))
    if not isinstance(body.get("id"), str) or not body["id"]:
        fail("background_queued", "the queued Response has no id to poll", body=body)
    return str(body["id"])


@check("background_polled_final")
def check_polled_final(body: Any, waited_s: float) -> None:
    """Polling a background response reaches completed or incomplete, with output."""
    status = body.get("status") if isinstance(body, dict) else None
    if status not in ("completed", "incomplete"):
        fail("background_polled_final", f"the background response reads {status!r} "
             f"{waited_s:.1f} s after it was created; expected completed or incomplete",
             status=status, error=body.get("error") if isinstance(body, dict) else None)
    if not body.get("output") or body.get("background") is not True:
        fail("background_polled_final", "the finished background response has no output or "
             "no longer says background: true", output=body.get("output"),
             background=body.get("background"))


@check("background_cancelled",
       verdicts=DEFAULT_VERDICTS | {VerdictClass.INCONCLUSIVE})  # ended before the cancel
def check_cancelled(answer_status: int, answer: Any, polled: Any) -> None:
    """Cancel answers 200 with the Response, and the response then reads ``cancelled``
    (``answer``: the cancel call's body, ``polled``: a later GET)."""
    if answer_status != 200 or not isinstance(answer, dict):
        fail("background_cancelled", f"cancelling a background response got HTTP "
             f"{answer_status}", status=answer_status, body=answer)
    status = polled.get("status") if isinstance(polled, dict) else None
    if answer.get("status") != "cancelled" or status != "cancelled":
        fail("background_cancelled", "after cancel the background response reads "
             f"{answer.get('status')!r}, then {status!r}; expected cancelled",
             answered=answer.get("status"), polled=status)


@check("background_cancel_idempotent")
def check_cancel_again(answer_status: int, answer: Any) -> None:
    """Cancelling a cancelled background response again returns it, still cancelled."""
    status = answer.get("status") if isinstance(answer, dict) else None
    if answer_status != 200 or status != "cancelled":
        fail("background_cancel_idempotent", f"a second cancel got HTTP {answer_status}, "
             f"status {status!r}; expected 200 and the response, still cancelled",
             status=answer_status, response_status=status)


@check("background_resume_exact")
def check_resume_exact(first: list[dict[str, Any]], resumed: list[dict[str, Any]],
                       after: int) -> None:
    """The resumed stream is exactly the first stream's events whose sequence_number is above
    ``after``, in order."""
    numbers = [event.get("sequence_number") for event in first]
    if not all(isinstance(n, int) for n in numbers):
        fail("background_resume_exact", "the background stream's events lack sequence_number, "
             "so it cannot be resumed", numbers=numbers[:20])
    expected = [event for event in first if event["sequence_number"] > after]
    if resumed != expected:
        got = [event.get("sequence_number") for event in resumed]
        want = [event["sequence_number"] for event in expected]
        pairs = zip(resumed, expected, strict=False)
        differs = next((i for i, (a, b) in enumerate(pairs) if a != b),
                       min(len(resumed), len(expected)))
        fail("background_resume_exact", f"the stream resumed after sequence_number {after} is "
             "not the rest of the first stream", expected=want[:40], got=got[:40],
             first_difference=differs)
