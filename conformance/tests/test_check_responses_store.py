"""The Responses store checks pass what they should and fail what they should: a final status
after a disconnect, a prompt cancel that keeps the text, a store unchanged by a restart, and
the field bounds (at them, past them, refused)."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.responses_store import (
    METADATA_KEY_CHARS,
    METADATA_PAIRS,
    METADATA_VALUE_CHARS,
    PAST_THE_BOUNDS,
    check_cancelled_promptly,
    check_final_after_disconnect,
    check_no_server_error,
    check_refused,
    check_survives_restart,
    check_within_limits,
    metadata_at_the_bounds,
)
from mlxcel_conformance.errors import ConformanceFailure

TEXT = [{"type": "message", "content": [{"type": "output_text", "text": "Once upon"}]}]


@pytest.mark.parametrize("status", ["completed", "incomplete", "cancelled", "failed"])
def test_a_final_status_passes(status: str) -> None:
    assert check_final_after_disconnect({"status": status}, 0.5) == status


@pytest.mark.parametrize("body", [{"status": "in_progress"}, {"status": "queued"}, {}, None])
def test_a_response_left_running_fails(body: Any) -> None:
    with pytest.raises(ConformanceFailure, match="response_final_after_disconnect"):
        check_final_after_disconnect(body, 60.0)


def test_cancelled_promptly_with_its_text_passes() -> None:
    check_cancelled_promptly({"status": "cancelled", "output": TEXT}, 0.2, 1.0)


@pytest.mark.parametrize(("body", "waited"), [
    ({"status": "cancelled", "output": TEXT}, 1.5),  # too late
    ({"status": "completed", "output": TEXT}, 0.2),  # kept generating
    ({"status": "cancelled", "output": []}, 0.2),  # lost what was streamed
])
def test_cancelled_late_or_empty_fails(body: dict[str, Any], waited: float) -> None:
    with pytest.raises(ConformanceFailure, match="response_cancelled_promptly"):
        check_cancelled_promptly(body, waited, 1.0)


def test_a_store_unchanged_by_the_restart_passes() -> None:
    body = {"id": "resp_1", "status": "completed", "output": TEXT}
    check_survives_restart(body, dict(body), (12, 30), (12, 30))


@pytest.mark.parametrize(("after", "counts"), [
    ({"status_code": 404}, (12, 30)),  # the response is gone
    ({"id": "resp_1", "status": "completed", "output": TEXT}, ("HTTP 400", 30)),  # chain lost
    ({"id": "resp_1", "status": "completed", "output": TEXT}, (12, 5)),  # conversation lost
])
def test_a_store_the_restart_lost_fails(after: Any, counts: tuple[int | str, ...]) -> None:
    body = {"id": "resp_1", "status": "completed", "output": TEXT}
    with pytest.raises(ConformanceFailure, match="stored_response_survives_restart"):
        check_survives_restart(body, after, (12, 30), counts)


def test_the_bounds_are_openais() -> None:
    metadata = metadata_at_the_bounds()
    assert len(metadata) == METADATA_PAIRS
    assert {len(k) for k in metadata} == {METADATA_KEY_CHARS}
    assert {len(v) for v in metadata.values()} == {METADATA_VALUE_CHARS}
    fields = {field for field, _ in PAST_THE_BOUNDS}
    assert fields == {"metadata", "safety_identifier", "top_logprobs", "user", "prompt_cache_key"}


def test_within_the_bounds() -> None:
    sent = {"metadata": {"a": "b"}}
    check_within_limits(200, {"metadata": {"a": "b"}}, sent)
    with pytest.raises(ConformanceFailure, match="field_limits_within"):
        check_within_limits(400, {"error": {}}, sent)
    with pytest.raises(ConformanceFailure, match="field_limits_within"):
        check_within_limits(200, {"metadata": {}}, sent)


def test_past_the_bounds() -> None:
    check_no_server_error(400, "metadata")
    check_no_server_error(200, "metadata")  # lenient is no failure of the contract
    with pytest.raises(ConformanceFailure, match="field_limits_no_server_error"):
        check_no_server_error(500, "metadata")
    check_refused(400, {"error": {"param": "metadata"}}, "metadata")
    for status, error in ((200, {}), (400, {"error": {"param": "input"}})):
        with pytest.raises(ConformanceFailure, match="field_limits_refused"):
            check_refused(status, error, "metadata")
