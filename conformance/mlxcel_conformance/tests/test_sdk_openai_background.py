"""Background mode through the official openai SDK, strict response validation on: create with
``background=True``, ``retrieve`` until the response ends, ``retrieve(stream=True,
starting_after=N)`` for the later events, ``cancel``. UNSUPPORTED where the server refuses
``background`` with a 400."""

from __future__ import annotations

import time

import openai
import pytest

from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.sdk_clients import openai_client
from mlxcel_conformance.surfaces import require_response_store
from mlxcel_conformance.target import Target

POLL_LIMIT_S = 120.0


@pytest.fixture(autouse=True)
def _responses_claimed(profile: Profile) -> None:
    if not profile.claims("responses"):
        pytest.skip(f"UNSUPPORTED: profile {profile.name} does not claim family responses")


@pytest.mark.conformance(family="sdk-openai", feature="sdk-openai.responses.background")
def test_sdk_background_create_poll_resume_cancel(target: Target, client: SuiteClient,
                                                  model_name: str | None) -> None:
    require_response_store(client, model_name)
    model = model_name or "default_model"
    with openai_client(target) as sdk:
        try:
            created = sdk.responses.create(model=model, input="Say hello.", background=True,
                                           max_output_tokens=16, temperature=0)
        except openai.BadRequestError as exc:
            pytest.skip(f"UNSUPPORTED: the server refuses background=True ({exc.message})")
        deadline = time.monotonic() + POLL_LIMIT_S
        polled = created
        while polled.status in ("queued", "in_progress") and time.monotonic() < deadline:
            time.sleep(0.1)
            polled = sdk.responses.retrieve(created.id)
        if polled.status not in ("completed", "incomplete") or not polled.output_text:
            fail("sdk_openai", "the background response did not end with text",
                 created_status=created.status, polled=polled.model_dump())
        events = list(sdk.responses.retrieve(created.id, stream=True, starting_after=1))
        numbers = [event.sequence_number for event in events]
        if not numbers or numbers[0] != 2 or numbers != list(range(2, 2 + len(numbers))) or \
                events[-1].type not in ("response.completed", "response.incomplete"):
            fail("sdk_openai", "retrieve(stream=True, starting_after=1) did not give the events "
                 "from sequence_number 2 to the end", numbers=numbers,
                 last=events[-1].type if events else None)
        long = sdk.responses.create(model=model, input="Tell me a very long story.",
                                    background=True, max_output_tokens=2000, temperature=1.0)
        cancelled = sdk.responses.cancel(long.id)
        if cancelled.status not in ("cancelled", "completed", "incomplete"):
            fail("sdk_openai", "cancel returned a response that is neither cancelled nor ended",
                 status=cancelled.status)
