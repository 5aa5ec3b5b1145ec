"""Anthropic's Message keys its current schema requires, nullable (``container``,
``usage.output_tokens_details`` and the other usage keys), typed from any server
(``checks/anthropic_schema_keys``). Their presence is required of the reference only (a profile
holding the current shapes that also claims mlxcel's own spec): no real recording carries
them yet, so the real API and other servers may send the older shape."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.anthropic_schema_keys import (
    check_anthropic_schema_keys,
    check_anthropic_stream_schema_keys,
)
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows_typed import messages_json, messages_payload, messages_stream
from mlxcel_conformance.profiles import Profile


def _required(profile: Profile) -> bool:
    return profile.current_shapes and profile.claims("schema")


@pytest.mark.conformance(family="anthropic", feature="anthropic.schema_keys.json")
def test_message_schema_keys(client: SuiteClient, model_name: str | None,
                             profile: Profile) -> None:
    body = messages_json(client, messages_payload(model_name, max_tokens=8))
    check_anthropic_schema_keys("message", body, current=_required(profile))


@pytest.mark.conformance(family="anthropic", feature="anthropic.schema_keys.stream")
def test_stream_schema_keys(client: SuiteClient, model_name: str | None,
                            profile: Profile) -> None:
    stream = messages_stream(client, messages_payload(model_name, max_tokens=8))
    check_anthropic_stream_schema_keys("Messages stream", stream.payloads,
                                       current=_required(profile))
