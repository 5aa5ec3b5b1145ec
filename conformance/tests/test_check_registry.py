"""Tests for checks/registry.py: checks are registered by name and fail under their own name."""

from __future__ import annotations

import pytest
from real_stream_corpus import rejects

from mlxcel_conformance.checks import REGISTRY, check, fail, get_check, run_check
from mlxcel_conformance.errors import ConformanceFailure, SetupError, Severity

EXPECTED = {
    "sse_framing",
    "done_terminator",
    "no_done_terminator",
    "chat_chunk_object",
    "chat_first_chunk_role",
    "chat_chunk_order",
    "usage_chunk_last",
    "no_usage_chunk",
    "tool_call_deltas",
    "logprobs_shape",
    "chat_completion_body",
    "completion_body",
    "completion_chunk_order",
    "error_body_openai",
    "error_status",
    "error_body_anthropic",
    "responses_event_order",
    "anthropic_event_order",
    "response_body",
    "anthropic_message_body",
    "concurrent_streams_complete",
}


def test_every_check_is_registered_with_a_description() -> None:
    assert EXPECTED <= set(REGISTRY)
    for name, spec in REGISTRY.items():
        assert spec.name == name and spec.description and isinstance(spec.severity, Severity)


def test_run_check_by_name() -> None:
    assert run_check("error_status", 404, 404) == 404
    with rejects("error_status"):
        run_check("error_status", 500, 400)


def test_unknown_check_is_a_setup_error() -> None:
    with pytest.raises(SetupError, match="unknown check"):
        run_check("no_such_check")
    with pytest.raises(SetupError):
        get_check("no_such_check")


def test_a_name_cannot_be_registered_twice() -> None:
    with pytest.raises(ValueError, match="twice"):
        check("sse_framing")(lambda: None)


def test_fail_uses_the_registered_severity_unless_overridden() -> None:
    with pytest.raises(ConformanceFailure) as info:
        fail("sse_framing", "boom", index=3)
    assert info.value.severity is Severity.CRITICAL
    assert info.value.evidence["index"] == 3
    assert info.value.evidence["tier"] == "contract" and info.value.evidence["source"]
    with pytest.raises(ConformanceFailure) as info:
        fail("sse_framing", "boom", severity=Severity.LOW)
    assert info.value.severity is Severity.LOW


def test_reimported_definition_may_register_again() -> None:
    spec = get_check("sse_framing")
    again = check("sse_framing", severity=spec.severity, description=spec.description)
    assert again(spec.func) is spec.func
    assert get_check("sse_framing").func is spec.func


def test_an_inline_check_is_found_but_not_run_by_name() -> None:
    spec = get_check("max_tokens_honoured")
    assert spec.func is None and spec.source.startswith("OpenAI API reference")
    with pytest.raises(SetupError, match="inline"):
        run_check("max_tokens_honoured")


def test_a_check_outside_the_checks_package_is_found_by_name() -> None:
    assert get_check("json_body").func is not None
    assert get_check("golden_transcript").tier.value == "contract"
