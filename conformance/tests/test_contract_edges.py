"""Where the contract ends (checks/contract_edges.py) and what the registry lets a check say
(checks/verdict_policy.py): a clean refusal is UNSUPPORTED, leniency LENIENT, a platform's
missing kernel ERROR/platform, a peer's documented values valid under its profile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlxcel_conformance.checks.chat_choices import check_chat_choices
from mlxcel_conformance.checks.contract_edges import (
    judge_leniency,
    judge_refusal,
    refused_field,
    skip_documented,
)
from mlxcel_conformance.checks.errors_checks import check_error_body_openai, check_error_status
from mlxcel_conformance.checks.registry import fail, inconclusive, lenient, unsupported
from mlxcel_conformance.checks.verdict_policy import SkipVerdict, VerdictClass, read_skip
from mlxcel_conformance.errors import ConformanceFailure, SetupError
from mlxcel_conformance.profiles import ALL_EXTENSIONS, get_profile

EXTENSIONS_AT_THE_EDGE = ("edge_limits", "route_errors")

SKIP = pytest.skip.Exception
TOOLS_STREAM = {"messages": [], "tools": [{}], "stream": True, "logprobs": True}
LLAMA_REFUSAL = json.dumps({"error": {"code": 400, "type": "invalid_request_error",
                                      "message": "logprobs is not supported with tools + stream"}})
VLLM_422 = json.dumps({"detail": [{"loc": ["body", "response_format", "json_schema"],
                                   "msg": "Field required", "type": "missing"}]})


def test_a_clean_refusal_of_an_optional_field_is_unsupported() -> None:
    """llama-server: "logprobs is not supported with tools + stream"."""
    assert refused_field(TOOLS_STREAM, 400, LLAMA_REFUSAL) in ("logprobs", "tools")
    with pytest.raises(SKIP, match="UNSUPPORTED: http_status.*HTTP 400 refusing"):
        judge_refusal("/v1/chat/completions", TOOLS_STREAM, 400, LLAMA_REFUSAL)


def test_vllm_mlx_422_on_response_format_is_unsupported() -> None:
    payload = {"messages": [], "response_format": {"type": "json_schema"}}
    assert refused_field(payload, 422, VLLM_422) == "response_format"


@pytest.mark.parametrize(("payload", "status", "text"), [
    ({"messages": []}, 400, json.dumps({"error": {"message": "messages is malformed"}})),
    ({"messages": [], "logprobs": True}, 400, json.dumps({"error": {"message": "bad"}})),
    ({"messages": [], "logprobs": True}, 401, json.dumps({"error": "logprobs needs a key"})),
    ({"messages": [], "logprobs": True}, 400, "logprobs: not JSON"),
])
def test_other_refusals_stay_a_fail(payload: dict[str, object], status: int, text: str) -> None:
    assert refused_field(payload, status, text) is None
    judge_refusal("/v1/chat/completions", payload, status, text)  # no verdict: FAIL follows


def test_a_metal_only_kernel_on_linux_is_a_platform_error() -> None:
    with pytest.raises(SetupError, match="ERROR/platform"):
        judge_refusal("/v1/chat/completions", {}, 500,
                      '{"detail": "[metal_kernel] No GPU back-end."}')


def test_accepting_invalid_input_is_lenient_not_a_fail() -> None:
    with pytest.raises(SKIP, match="LENIENT"):
        check_error_status(200, 400, case="max_tokens_negative")
    with pytest.raises(SKIP, match="LENIENT"):
        check_error_body_openai({"choices": []}, status=200, expected=400)
    judge_leniency(200, 401, None)  # an auth or routing status is no leniency
    with pytest.raises(ConformanceFailure):
        check_error_status(200, 401)
    with pytest.raises(ConformanceFailure):
        check_error_status(200, 404)


def test_a_peer_documents_its_own_values() -> None:
    llama = get_profile("llama-server")
    assert llama.documented("max_tokens=-1")
    assert llama.narrowed(["chat"]).documented("anthropic.max_tokens_missing")
    assert get_profile("mlx-lm").documented("max_tokens=-1") is None
    with pytest.raises(SKIP, match="UNSUPPORTED.*README"):
        skip_documented(llama, "max_tokens=-1")
    skip_documented(get_profile("mlxcel"), "max_tokens=-1")


def test_the_registry_refuses_a_verdict_its_check_did_not_declare() -> None:
    with pytest.raises(SetupError, match="may not give IGNORED"):
        fail("sse_framing", "x", ignored=True)
    with pytest.raises(SetupError, match="may not give UNSUPPORTED"):
        unsupported("sse_framing", "x")
    with pytest.raises(SetupError, match="may not give LENIENT"):
        lenient("http_status", "x")


def test_the_policy_page_names_every_verdict_class() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "conformance" / "verdicts.md")
    text = page.read_text()
    for verdict in VerdictClass:
        assert f"**{verdict.value}**" in text, verdict
    for edge in EXTENSIONS_AT_THE_EDGE:
        assert edge in ALL_EXTENSIONS and f"`{edge}`" in text


def test_a_field_accepted_and_not_honoured_is_ignored() -> None:
    """mlx-lm answers n=2 with one choice; the IGNORED class names it, and it still fails."""
    one = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]}
    with pytest.raises(ConformanceFailure, match="IGNORED") as info:
        check_chat_choices(one, 2)
    assert info.value.evidence["verdict_class"] == "IGNORED"


@pytest.mark.parametrize(("reason", "verdict", "check", "message"), [
    ("Skipped: LENIENT: error_status: HTTP 200 (messages_empty)", VerdictClass.LENIENT,
     "error_status", "HTTP 200 (messages_empty)"),
    ("Skipped: INCONCLUSIVE: structured_output_valid: cut after 9 characters",
     VerdictClass.INCONCLUSIVE, "structured_output_valid", "cut after 9 characters"),
    ("Skipped: UNSUPPORTED: profile mlx-lm does not claim family responses",
     VerdictClass.UNSUPPORTED, "", "profile mlx-lm does not claim family responses"),
    ("UNSUPPORTED with --robustness: its memory watch follows one process",
     VerdictClass.UNSUPPORTED, "", "UNSUPPORTED with --robustness: its memory watch follows "
     "one process"),
    # what the report wrote before LENIENT had rows of its own
    ("Skipped: LENIENT: error_status: m (not a FAIL; UNSUPPORTED in the report)",
     VerdictClass.LENIENT, "error_status", "m"),
])
def test_a_skip_reason_carries_its_verdict_to_the_report(
        reason: str, verdict: VerdictClass, check: str, message: str) -> None:
    said = read_skip(reason)
    assert said is not None and (said.verdict, said.check, said.message) == (
        verdict, check, message)


def test_a_plain_skip_is_no_verdict_and_the_registry_writes_what_it_reads() -> None:
    assert read_skip("Skipped: the model did not reason") is None
    assert read_skip("the lenient reader") is None
    with pytest.raises(SKIP) as info:
        lenient("error_status", "HTTP 200")
    said = read_skip(str(info.value))
    assert said == SkipVerdict(VerdictClass.LENIENT, "error_status", "HTTP 200")
    assert "UNSUPPORTED" not in str(info.value)
    with pytest.raises(SetupError, match="may not give INCONCLUSIVE"):
        inconclusive("sse_framing", "x")
