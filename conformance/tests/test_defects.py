"""Distinct defects: FAILs grouped by check and cause, counted per peer and listed once each."""

from __future__ import annotations

import json
from typing import Any

import pydantic
import pytest
from anthropic.types import RawMessageStreamEvent
from defect_cases import LOGPROBS, add_fail, raised
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import Response

from mlxcel_conformance.checks.anthropic_body import check_anthropic_message_body
from mlxcel_conformance.checks.engine_checks import STOP_NOT_APPLIED, check_stop_string_not_leaked
from mlxcel_conformance.checks.errors_checks import check_error_body_openai, check_error_status
from mlxcel_conformance.checks.field_parity import check_field_parity, openai_error_objects
from mlxcel_conformance.checks.openai_common import check_no_usage_chunk, check_usage_chunk_last
from mlxcel_conformance.checks.responses_body import check_response_body
from mlxcel_conformance.checks.responses_events import CUT_ENDS_COMPLETED
from mlxcel_conformance.checks.vision import check_image_not_a_server_error
from mlxcel_conformance.defects import (
    STREAM_ADDS_REASONING,
    distinct,
    entries,
    entry,
    fail_rows,
    normalize,
    refusal,
    stream_adds_reasoning,
    wrong_object,
)
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.goldens import (
    USAGE_FOLDED,
    _state_machine_diffs,
    check_golden,
    compare_transcripts,
)
from mlxcel_conformance.goldens import _defect as golden_defect
from mlxcel_conformance.report import Report
from mlxcel_conformance.sdk_clients import schema_form
from mlxcel_conformance.sse import SSEEvent


def test_positions_are_not_part_of_a_cause() -> None:
    assert normalize("chunk 3 changes ['created'] within one stream") == \
        normalize("chunk 11 changes ['created'] within one stream")
    assert normalize("event 2 (response.output_item.added): output_index None, expected the "
                     "next index 0") == normalize("event 7 (response.output_item.added): "
                                                  "output_index None, expected the next index 0")
    assert normalize("body/choices/0: 'id' is required") == "body/choices/N: 'id' is required"
    assert normalize("HTTP 500 for a client error") == "HTTP 500 for a client error"


def test_measurements_are_not_part_of_a_cause() -> None:
    assert normalize("/health p99 259 ms (max 324.5 ms) during 4 streams; budget 100 ms") == \
        "/health p99 N ms (max N ms) during 4 streams; budget N ms"
    assert normalize("grew +38.2 MiB, -15.4 MiB (10%) in 2.5s") == \
        "grew +N MiB, N MiB (N %) in N s"
    assert normalize("HTTP 500 after 3 retries, 256 tokens, p99") == \
        "HTTP 500 after 3 retries, 256 tokens, p99"


def test_one_timing_defect_seen_in_each_pass_is_one_fail() -> None:
    """``--passes`` merges a feature's records: the same slow /health, measured at other
    figures in each pass, is one defect, not one per pass."""
    report = Report(target="t", profile="mlxcel")
    for p99, top in (("259", "324"), ("149", "236"), ("207", "231")):
        message = (f"/health p99 {p99} ms (max {top} ms, 0 unanswered) during 4 never-reading "
                   f"streams; budget 100 ms above 29 ms")
        add_fail(report, "robustness.stream_backpressure",
             raised("health_within_budget", message), family="robustness")
    assert len(report.distinct_defects()) == 1


def test_one_defect_failing_two_features_counts_once() -> None:
    report = Report(target="t", profile="llama-server")
    add_fail(report, "chat.json.body", raised("chat_completion_body", LOGPROBS))
    add_fail(report, "parity.chat.json", raised("chat_completion_body", LOGPROBS))
    add_fail(report, "chat.errors.malformed_json", _status(500))
    found = report.distinct_defects()
    assert [len(d.features) for d in found] == [2, 1]
    assert found[0].features == [("chat", "chat.json.body"), ("chat", "parity.chat.json")]
    assert found[0].checks == ["chat_completion_body"] and "Chat Completions" in found[0].source
    assert report.to_dict()["summary"]["distinct_defects"] == 2


def _status(status: int, case: str | None = None) -> ConformanceFailure:
    with pytest.raises(ConformanceFailure) as info:
        check_error_status(status, 400, case=case)
    return info.value


def test_a_wrong_status_is_one_defect_whatever_bad_input_showed_it() -> None:
    report = Report(target="t", profile="p")
    for case in ("messages_empty", "role_unknown"):
        add_fail(report, "chat.errors.invalid_body", _status(422, case))
    add_fail(report, "chat.tools.choice_errors", _status(422, "named_undeclared"))
    add_fail(report, "chat.errors.malformed_json", _status(500))
    (framework, crashed) = report.distinct_defects()
    assert framework.features == [("chat", "chat.errors.invalid_body"),
                                  ("chat", "chat.tools.choice_errors")]
    assert "HTTP 422" in framework.key
    assert crashed.features == [("chat", "chat.errors.malformed_json")]
    # one cause on another route is the same defect, seen there too
    add_fail(report, "responses.errors.malformed_json", _status(500), family="responses")
    found = report.distinct_defects()
    assert len(found) == 2 and found[1].families == ["chat", "responses"]
    assert found[1].also_seen("chat", "chat.errors.malformed_json") == [
        ("responses", "responses.errors.malformed_json")]
    assert [where for _, where in fail_rows(report.to_dict()["records"])] == [
        ("chat", "chat.errors.invalid_body"), ("chat", "chat.errors.malformed_json")]


def test_accepting_invalid_input_is_no_defect() -> None:
    with pytest.raises(pytest.skip.Exception, match="LENIENT"):
        _status(200, "messages_empty")


def test_one_property_in_two_forms_is_one_defect() -> None:
    """The schema check of a feature and the contract view of a golden; a chat and a
    completion body missing the same key; server-made ids left out."""
    block = "/content_block: {{'type': 'tool_use', 'id': '{}', 'name': 'f'}} is not valid"
    one = entry("schema_conformance", "POST /v1/messages event 3: "
                + block.format("r7eZ4eZJWYIMEcRPHVRFjyTiTja"), {}, "anthropic")
    two = entry("golden_transcript", "x", {
        "defect": "golden: event 5: " + block.format("FAWa9ByqPG16j5NQ7IRNbJNsdfpimMhv")},
        "anthropic")
    assert one["key"] == two["key"]
    chat = entry("chat_completion_body", LOGPROBS, {}, "chat")
    completions = entry("completion_body", LOGPROBS, {}, "completions")
    assert chat["key"] == completions["key"]
    assert entry("error_status", "m", {}, "chat")["key"] != chat["key"]


def test_a_golden_counts_with_the_feature_made_for_its_defect() -> None:
    report = Report(target="t", profile="p")
    machine = ("event 2 (response.output_item.added): output_index None, expected the next "
               "index 0")
    add_fail(report, "responses.stream.event_order",
          raised("responses_event_order", machine), family="responses")
    response = {"id": "r", "object": "response", "status": "in_progress", "output": []}
    events = [{"type": "response.created", "response": response},
              {"type": "response.in_progress", "response": response},
              {"type": "response.output_item.added",  # llama-server's: no output_index
               "item": {"type": "message", "id": "m", "role": "assistant", "content": []}}]
    raw = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    with pytest.raises(ConformanceFailure) as info:
        check_golden({"status": 200, "content_type": "text/event-stream", "events": []},
                     {"status": 200, "content_type": "text/event-stream", "events": [],
                      "_raw": raw}, "shape", "responses/count_stream", ("POST", "/v1/responses"))
    assert info.value.evidence["defect"].split(":")[0] == "responses_event_order"
    add_fail(report, "golden.responses.count_stream", info.value, family="responses")
    # a golden whose client error got the wrong status counts with the error features
    add_fail(report, "chat.errors.malformed_json", _status(500, "malformed JSON"))
    status = {"status": 400, "content_type": "application/json", "body": {}}
    with pytest.raises(ConformanceFailure) as info:
        check_golden(status, {**status, "status": 500}, "shape", "chat/error_malformed_json")
    add_fail(report, "golden.chat.error_malformed_json", info.value)
    found = {d.key.split(":")[0]: d.features for d in report.distinct_defects()}
    assert found == {
        "error_status": [("chat", "chat.errors.malformed_json"),
                                ("chat", "golden.chat.error_malformed_json")],
        "responses_event_order": [
            ("responses", "responses.stream.event_order"),
            ("responses", "golden.responses.count_stream")]}


def test_a_refusal_is_one_defect_wherever_a_valid_request_met_it() -> None:
    said = '{"error": {"code": 400, "message": "logprobs is not supported with tools + stream"}}'
    report = Report(target="t", profile="p")
    add_fail(report, "chat.tools.stream.logprobs", raised(
        "http_status", "expected HTTP 200, got 400", defect=refusal(400, said)))
    with pytest.raises(ConformanceFailure) as info:
        check_golden({"status": 200, "content_type": "text/event-stream", "events": []},
                     {"status": 400, "content_type": "application/json", "body": {},
                      "_raw": said}, "shape", "chat/tool_call_stream_logprobs")
    add_fail(report, "golden.chat.tool_call_stream_logprobs", info.value)
    other = '{"error": {"code": 400, "message": "previous_response_id is not supported"}}'
    add_fail(report, "chat.other", raised("http_status", "expected HTTP 200, got 400",
                                         defect=refusal(400, other)))
    found = report.distinct_defects()
    assert [len(d.features) for d in found] == [2, 1], found
    assert "logprobs is not supported" in found[0].key


def test_transport_failures_name_their_route() -> None:
    one = entry("ReadTimeout", "ReadTimeout: timed out", {
        "transport_error": "ReadTimeout", "request": "POST http://h/v1/chat/completions"},
        "chat")
    two = entry("ReadTimeout", "ReadTimeout: timed out", {
        "transport_error": "ReadTimeout", "request": "POST http://h/v1/messages"}, "chat")
    assert one["key"] != two["key"] and "/v1/messages" in two["key"]


def test_records_written_before_defects_were_kept_still_count() -> None:
    old = {"family": "chat", "feature": "x", "verdict": "FAIL", "checks": ["c"],
           "message": "m", "evidence": {"source": "s"}}
    assert [d.features for d in distinct([old, {**old, "feature": "y"}])] == [
        [("chat", "x"), ("chat", "y")]]


def test_a_body_that_is_not_json_is_one_defect_per_family() -> None:
    """mlx-lm's /v1/models without a hub cache: an empty body, found by the check and the
    golden alike."""
    check = entry("json_body", "response body is not JSON: Expecting value: line 1 column 1",
                  {}, "models")
    golden = entry("golden_transcript", "x", {"defect": 'golden: body: expected JSON, got text ""'},
                   "models")
    chat = entry("json_body", "response body is not JSON: Expecting value", {}, "chat")
    assert check["key"] == golden["key"] != chat["key"]
    assert entry("c", "HTTP 400 for logprobs=1", {})["key"] == \
        entry("c", "HTTP 400 for logprobs=5", {})["key"]


def test_a_crash_on_an_invalid_body_is_one_defect_and_an_image_another() -> None:
    """llama-server answers 500 for every JSON exception (its ex_wrapper): malformed JSON on
    four routes, a wrong type on /tokenize and a missing field on /v1/messages are one
    defect; its 500 on an image a text-only model cannot read is another, on chat (the error
    check) as on Responses and Messages (``no_server_error``)."""
    crash = "error_status: HTTP 500 for a client error: the server crashed on input it should " \
            "reject"
    json_chat = entry("error_status", "HTTP 500 for a client error ... (malformed JSON)",
                      {"defect": crash}, "chat")
    json_golden = entry("golden_transcript", "golden ...", {
        "defect": crash, "case": "anthropic/error_malformed_json"}, "anthropic")
    wrong_type = entry("error_status", "HTTP 500 ... (content_number)", {"defect": crash},
                       "tokenize")
    missing = entry("error_status", "HTTP 500 ... (messages_missing)", {"defect": crash},
                    "anthropic")
    image = entry("error_status", "HTTP 500 ... (image on a text-only model)",
                  {"defect": crash}, "chat")
    assert json_chat["key"] == json_golden["key"] == wrong_type["key"] == missing["key"]
    assert json_chat["key"].endswith("[input: an invalid body]")
    assert image["key"] != json_chat["key"]
    for path in ("/v1/responses", "/v1/messages"):
        with pytest.raises(ConformanceFailure) as info:
            check_image_not_a_server_error(path, 500, {})
        assert entry(info.value.check, info.value.message, info.value.evidence,
                     "responses")["key"] == image["key"]


def test_an_image_answered_500_is_one_defect_on_every_route() -> None:
    keys = set()
    for path in ("/v1/responses", "/v1/messages"):
        with pytest.raises(ConformanceFailure) as info:
            check_image_not_a_server_error(path, 500, {})
        keys.add(entry(info.value.check, info.value.message, info.value.evidence, "x")["key"])
    assert len(keys) == 1


def test_an_ignored_field_is_one_defect_whichever_case_showed_it() -> None:
    """mlx-lm ignores ``n`` (one choice in a body, index 0 only in a stream) and
    ``tool_choice`` (none still calls, named and required do not): one defect each."""
    n_body = raised("chat_choices", "n=2 was answered with 1 choices", ignored=True,
                      ignored_field="n")
    n_stream = raised("chat_choices", "n=2: the stream's choice indexes are [0], not 0..1",
                        ignored=True, ignored_field="n")
    none = raised("tool_calls_finish_reason", "tool_choice none still produced a tool call",
                    ignored=True, ignored_field="tool_choice")
    forced = raised("tool_call_declared", "tool_choice named answered without a tool call",
                      ignored=True, ignored_field="tool_choice")
    report = Report(target="t", profile="mlx-lm")
    add_fail(report, "chat.n.json", n_body)
    add_fail(report, "chat.n.stream", n_stream)
    add_fail(report, "chat.tools.choice_none", none)
    add_fail(report, "chat.tools.choice_forced", forced)
    found = report.distinct_defects()
    assert [d.features for d in found] == [
        [("chat", "chat.n.json"), ("chat", "chat.n.stream")],
        [("chat", "chat.tools.choice_none"), ("chat", "chat.tools.choice_forced")]]
    assert all(f.message.startswith("IGNORED: ") for f in (n_body, forced))


def test_an_error_code_of_any_status_is_one_defect() -> None:
    keys = set()
    for code in (400, 401):
        with pytest.raises(ConformanceFailure) as info:
            check_error_body_openai({"error": {"message": "m", "type": "t", "code": code}})
        keys.add(entry(info.value.check, info.value.message, info.value.evidence)["key"])
    assert len(keys) == 1


def test_a_bare_string_error_is_one_defect_in_both_forms() -> None:
    body = {"error": "max_tokens must be at least 1"}
    with pytest.raises(ConformanceFailure) as shape:
        check_error_body_openai(body)
    with pytest.raises(ConformanceFailure) as parity:
        check_field_parity("error", openai_error_objects(body))
    assert entry(shape.value.check, shape.value.message, shape.value.evidence)["key"] == \
        entry(parity.value.check, parity.value.message, parity.value.evidence)["key"]


def test_an_sdk_round_trip_counts_with_the_route_it_called() -> None:
    """The SDK's JSONDecodeError on models.list() is the /v1/models body that is not JSON."""
    route = entry("json_body", "response body is not JSON: Expecting value", {}, "models",
                  "models.list")
    sdk = entry("JSONDecodeError", "JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
                {}, "sdk-openai", "sdk-openai.models")
    assert route["key"] == sdk["key"]
    assert entry("JSONDecodeError", "JSONDecodeError: x", {}, "sdk-openai",
                 "sdk-openai.chat.stream")["key"] != route["key"]


def test_an_sdk_validation_error_is_the_schema_finding_it_repeats() -> None:
    chunk = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
    with pytest.raises(pydantic.ValidationError) as info:
        ChatCompletionChunk.model_validate(chunk)
    chat = "/object: 'chat.completion.chunk' was expected"
    schema = entry("schema_conformance", f"POST /v1/chat/completions event 9: {chat}",
                   {"defect": wrong_object(chat, "chat.completion")}, "chat")
    assert entry("APIResponseValidationError", "APIResponseValidationError: ...",
                 {"defect": schema_form(info.value)}, "sdk-openai")["key"] == schema["key"]
    # mlx-lm's one usage constant on /v1/completions too: the wrong value is the cause
    text = "/object: 'text_completion' was expected"
    assert entry("schema_conformance", f"POST /v1/completions event 17: {text}",
                 {"defect": wrong_object(text, "chat.completion")}, "completions")["key"] == \
        schema["key"]
    assert wrong_object("/id: 'x' was expected", "chat.completion") is None
    block = {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "a", "name": "get_weather"}}
    with pytest.raises(pydantic.ValidationError) as info:
        pydantic.TypeAdapter(RawMessageStreamEvent).validate_python(block)
    golden = entry("golden_transcript", "golden ...", {"defect": (
        "golden: event 1: /content_block: {'type': 'tool_use', 'id': 'LDX9Qcw6Sc24JzjojKGJRZTr7"
        "qV0I88N', 'name': 'get_weather'} is not valid under any of the given schemas ('input' "
        "is a required property)")}, "anthropic")
    assert entry("APIResponseValidationError", "APIResponseValidationError: ...",
                 {"defect": schema_form(info.value)}, "sdk-anthropic")["key"] == golden["key"]


def test_a_golden_with_two_named_rules_is_two_defects() -> None:
    """llama-server's thinking stream: a thinking block without ``signature`` and a text block
    started inside it (event order); neither hides the other, and each counts once."""
    diffs = ["event 1: /content_block: {'type': 'thinking', 'thinking': ''} is not valid under "
             "any of the given schemas ('signature' is a required property)",
             "anthropic_event_order: event 10 (content_block_start): not allowed inside a "
             "content block"]
    causes = golden_defect("anthropic/thinking_stream", diffs, 200, 200, "")
    assert isinstance(causes, list) and len(causes) == 2
    found = entries("golden_transcript", "golden ...", {"defect": causes}, "anthropic")
    assert [f["key"].split(":")[0] for f in found] == ["anthropic_event_order", "schema"]
    assert found[0]["message"].startswith("anthropic_event_order: event 10")
    assert found[1]["message"].startswith("event 1: /content_block")


def test_a_usage_chunk_with_choices_is_the_usage_rule_in_a_golden_too() -> None:
    """llama-server sends /v1/completions' usage on the finish chunk: the golden's order diff
    is ``usage_chunk_last``'s finding."""
    finish: dict[str, Any] = {"choices": [{"text": "", "index": 0, "finish_reason": "length"}]}
    want: list[Any] = [{"choices": [{"text": "a", "index": 0, "finish_reason": None}]}, finish,
                       {"choices": [], "usage": {"total_tokens": 3}}, "[DONE]"]
    have = [want[0], {**finish, "usage": {"total_tokens": 3}}, "[DONE]"]
    expected = {"status": 200, "content_type": "text/event-stream", "events": want}
    diffs = compare_transcripts(expected, {**expected, "events": have}, "shape")
    assert diffs[0] == USAGE_FOLDED and diffs[1].startswith("event order")
    assert golden_defect("completions/capital_stream_usage", diffs, 200, 200, "") == USAGE_FOLDED


def test_an_sdk_status_error_is_the_refusal_it_met() -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    sdk = entry("BadRequestError", f"BadRequestError: Error code: 400 - {body!r}", {}, "sdk-x")
    check = entry("http_status", "expected HTTP 200, got 400",
                  {"defect": refusal(400, json.dumps(body))}, "anthropic")
    assert sdk["key"] == check["key"] == "http_status: HTTP 400: bad"
    text = entry("InternalServerError", "InternalServerError: Error code: 500 - oops {", {})
    assert text["key"] == "http_status: HTTP 500: oops {"


def test_a_cut_response_ending_completed_is_one_defect_in_three_forms() -> None:
    """vllm-mlx ends a response cut by max_output_tokens with response.completed: the event
    machine (its status incomplete there), the feature's terminal check and a golden's."""
    response = {"id": "r", "object": "response", "status": "incomplete", "output": []}
    machine = raised("responses_event_order", "event 20 (response.completed): "
                       "response.status is 'incomplete', expected 'completed'",
                       defect=CUT_ENDS_COMPLETED)
    feature = raised("responses_event_order", "a length stop must end with "
                       "response.incomplete", defect=CUT_ENDS_COMPLETED)
    want = [{"event": "response.created", "data": {"type": "response.created",
                                                   "response": response}},
            {"event": "response.incomplete", "data": {"type": "response.incomplete",
                                                      "response": response}}]
    have = [want[0], {"event": "response.completed",
                      "data": {"type": "response.completed", "response": response}}]
    expected = {"status": 200, "content_type": "text/event-stream", "events": want}
    diffs = compare_transcripts(expected, {**expected, "events": have}, "shape")
    assert diffs == [CUT_ENDS_COMPLETED]
    golden = golden_defect("responses/story_incomplete_stream", diffs, 200, 200, "")
    keys = {entry(f.check, f.message, f.evidence)["key"] for f in (machine, feature)}
    assert keys == {entry("golden_transcript", "g", {"defect": golden})["key"]}


def test_a_thinking_block_without_signature_is_one_defect_in_every_form() -> None:
    """vllm-mlx: the assembled message's check, the golden's schema diff and the Anthropic
    SDK all meet the thinking block that lacks ``signature``."""
    message: dict[str, Any] = {"id": "m", "type": "message", "role": "assistant", "model": "x",
                               "stop_reason": "end_turn", "stop_sequence": None,
                               "usage": {"input_tokens": 1, "output_tokens": 1},
                               "content": [{"type": "thinking", "thinking": "hm"}]}
    with pytest.raises(ConformanceFailure) as body:
        check_anthropic_message_body(message)
    golden = entry("golden_transcript", "g", {"defect": (
        "golden: event 1: /content_block: {'type': 'thinking', 'thinking': ''} is not valid "
        "under any of the given schemas ('signature' is a required property)")}, "anthropic")
    block = {"type": "content_block_start", "index": 0,
             "content_block": {"type": "thinking", "thinking": ""}}
    with pytest.raises(pydantic.ValidationError) as sdk:
        pydantic.TypeAdapter(RawMessageStreamEvent).validate_python(block)
    assert entry(body.value.check, body.value.message, body.value.evidence)["key"] == \
        golden["key"] == entry("APIResponseValidationError", "x",
                               {"defect": schema_form(sdk.value)})["key"]
    # a signature that is there but not a string is the check's own finding
    message["content"] = [{"type": "thinking", "thinking": "hm", "signature": 5}]
    with pytest.raises(ConformanceFailure) as typed:
        check_anthropic_message_body(message)
    assert "defect" not in typed.value.evidence


def test_a_response_lacking_required_keys_is_one_defect_in_the_check_and_the_sdk() -> None:
    """llama-server's Response lacks ``error`` (the check stops there) and ``tools``,
    ``tool_choice``, ``parallel_tool_calls`` (what the SDK names): one incomplete object."""
    body = {"id": "resp_1", "object": "response", "created_at": 1, "model": "m",
            "status": "completed", "output": []}
    with pytest.raises(ConformanceFailure) as check:
        check_response_body(body)
    with pytest.raises(pydantic.ValidationError) as sdk:
        Response.model_validate(body)
    assert entry(check.value.check, check.value.message, check.value.evidence)["key"] == \
        entry("APIResponseValidationError", "x", {"defect": schema_form(sdk.value)})["key"]


def test_usage_on_the_finish_chunk_is_one_defect_asked_for_or_not() -> None:
    """vllm-mlx sends usage on the finish chunk: unasked (no_usage_chunk), beside its usage chunk
    (two chunks carry usage) and, on /v1/completions, instead of it; llama-server the last."""
    finish = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m",
              "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
              "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
    usage = {**finish, "choices": []}
    keys = set()
    for check, chunks in ((check_no_usage_chunk, [finish]), (check_usage_chunk_last, [finish]),
                          (check_usage_chunk_last, [finish, usage])):
        with pytest.raises(ConformanceFailure) as info:
            check(chunks)
        keys.add(entry(info.value.check, info.value.message, info.value.evidence)["key"])
    assert len(keys) == 1
    with pytest.raises(ConformanceFailure) as unasked:
        check_no_usage_chunk([usage])  # a usage chunk of its own, unasked: another defect
    assert entry(unasked.value.check, unasked.value.message,
                 unasked.value.evidence)["key"] not in keys


def test_stop_strings_not_honoured_are_one_defect_however_they_go_wrong() -> None:
    """vllm-mlx on SmolLM2: one stop ignored (IGNORED, named so), another cut in the wrong
    place, and Messages' stop_sequences ignored: one stop-matching defect, not three."""
    story = "Once upon a time, a small robot named Pip lived in a quiet village"
    with pytest.raises(ConformanceFailure) as chat:
        check_stop_string_not_leaked(story, "qui", story)
    assert chat.value.message.startswith("IGNORED: ")
    assert chat.value.evidence["verdict_class"] == "IGNORED"
    with pytest.raises(ConformanceFailure) as cut_late:  # stopped, but not where it matched
        check_stop_string_not_leaked(story.replace("qui", ""), "qui", story)
    assert not cut_late.value.message.startswith("IGNORED")
    keys = {entry(f.check, f.message, f.evidence)["key"] for f in (chat.value, cut_late.value)}
    assert keys == {STOP_NOT_APPLIED}


def test_a_golden_whose_stream_ends_completed_when_cut_counts_with_the_feature() -> None:
    """vllm-mlx's count_stream golden: the transcript's events agree, and the event machine
    run on the raw stream finds the cut response ended by response.completed. The golden's
    diff is the machine's named defect, so golden and feature are one defect (issue 39)."""
    def event(n: int, kind: str, status: str) -> SSEEvent:
        response = {"id": "resp_1", "object": "response", "status": status, "output": [],
                    "incomplete_details": {"reason": "max_output_tokens"}
                    if status == "incomplete" else None}
        data = {"type": kind, "sequence_number": n, "response": response}
        return SSEEvent(event=kind, data=json.dumps(data))

    events = [event(0, "response.created", "in_progress"),
              event(1, "response.in_progress", "in_progress"),
              event(2, "response.completed", "incomplete")]
    diffs = _state_machine_diffs("/v1/responses", events)
    assert diffs == [CUT_ENDS_COMPLETED]
    golden = golden_defect("responses/count_stream", diffs, 200, 200, "")
    machine = raised("responses_event_order", "event 20 (response.completed): "
                       "response.status is 'incomplete', expected 'completed'",
                       defect=CUT_ENDS_COMPLETED)
    assert entry("golden_transcript", "g", {"defect": golden})["key"] == \
        entry(machine.check, machine.message, machine.evidence)["key"]


def test_a_stream_that_adds_reasoning_is_one_defect_on_responses_and_messages() -> None:
    """vllm-mlx 0.6.0 on SmolLM2: the Responses stream has a reasoning item and the Messages
    stream a thinking block that the same requests' bodies do not: one defect."""
    assert stream_adds_reasoning(["reasoning", "message"], ["message"]) == STREAM_ADDS_REASONING
    assert stream_adds_reasoning(["thinking", "text"], ["text"]) == STREAM_ADDS_REASONING
    assert stream_adds_reasoning(["message"], ["reasoning", "message"]) is None
    assert stream_adds_reasoning(["thinking", "tool_use"], ["text"]) is None
