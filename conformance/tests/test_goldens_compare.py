"""Golden normalization and the two replay modes."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from mlxcel_conformance.checks.openai_chat import check_chat_completion_body
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.golden_binary import binary_summary
from mlxcel_conformance.golden_media_cases import IMAGE_CASES, SPEECH_CASES
from mlxcel_conformance.goldens import (
    RAW,
    check_golden,
    compare_exact,
    compare_shape,
    compare_transcripts,
    contract_diffs,
    event_kinds,
    family_goldens,
    load_documents,
    normalize,
)

BODY: dict[str, Any] = {
    "id": "chatcmpl-1",
    "created": 1,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"},
                 "finish_reason": "stop", "logprobs": None}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_normalize_replaces_volatile_fields() -> None:
    out = normalize(BODY)
    assert out["id"] == "<id>" and out["created"] == "<created>" and out["model"] == "<model>"
    assert out["choices"][0]["message"]["content"] == "Hi"


def test_exact_mode_sees_text_and_count_changes() -> None:
    other = copy.deepcopy(BODY)
    other["choices"][0]["message"]["content"] = "Hello"
    other["usage"]["completion_tokens"] = 2
    diffs = compare_exact(BODY, other)
    assert any("content" in d for d in diffs) and any("completion_tokens" in d for d in diffs)


def test_exact_mode_allows_float_noise_but_not_a_different_number() -> None:
    logprob = {"token": "a", "logprob": -9.296924591064453, "bytes": [97]}
    assert compare_exact(logprob, {**logprob, "logprob": -9.296923637390137}) == []
    assert compare_exact(logprob, {**logprob, "logprob": -9.29}) != []
    # Near 0, the same token's logprob from float32 sums in two orders (two BLAS builds).
    near_zero = {**logprob, "logprob": -0.0025587081909179688}
    assert compare_exact(near_zero, {**logprob, "logprob": -0.0025785076431930065}) == []
    assert compare_exact(near_zero, {**logprob, "logprob": -0.0027}) != []
    assert compare_exact({"n": 3}, {"n": 3.0000001}) != []  # whole numbers stay exact


def test_shape_mode_tolerates_values_and_reference_keys_but_not_types() -> None:
    other = copy.deepcopy(BODY)
    other["choices"][0]["message"]["content"] = "Something else"
    other["extra"] = True
    assert compare_shape(BODY, other) == []
    other["usage"]["total_tokens"] = "4"
    assert any("total_tokens" in d for d in compare_shape(BODY, other))
    # which keys must be present is the public contract's business, not the golden's
    del other["usage"]
    assert not any("usage" in d for d in compare_shape(BODY, other))


def _raw(body: Any, status: int = 200) -> dict[str, Any]:
    return {"status": status, "content_type": "application/json", "body": normalize(body),
            RAW: json.dumps(body)}


CHAT = ("POST", "/v1/chat/completions")
PLAIN: dict[str, Any] = {"id": "c", "object": "chat.completion", "created": 1, "model": "m",
                         "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                                      "message": {"role": "assistant", "content": "hi"}}]}
CALL = {"id": "call_1", "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}


def _with_call(call: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(PLAIN)
    body["choices"][0].update(finish_reason="tool_calls")
    body["choices"][0]["message"].update(content=None, tool_calls=[call])
    return body


def test_shape_mode_holds_what_the_case_adds_to_the_contract_view_of_the_spec() -> None:
    assert contract_diffs(*CHAT, _raw(_with_call(CALL))) == []
    broken = _with_call({k: v for k, v in CALL.items() if k != "id"})
    diffs = contract_diffs(*CHAT, _raw(broken))
    assert any("tool_calls/0" in d and "'id'" in d for d in diffs), diffs
    expected = {"status": 200, "content_type": "application/json",
                "body": normalize(_with_call(CALL))}
    with pytest.raises(ConformanceFailure):
        check_golden(expected, _raw(broken), "shape", "case", CHAT)
    check_golden(expected, _raw(_with_call(CALL)), "shape", "case", CHAT)


def test_shape_mode_leaves_the_base_objects_to_the_body_and_parity_features() -> None:
    """One defect, one FAIL: a chat body without `choices[].logprobs` (llama-server's) fails
    chat.json.body and parity.chat.json, not every golden with a chat body."""
    bare = copy.deepcopy(PLAIN)
    del bare["choices"][0]["logprobs"]
    del bare["choices"][0]["finish_reason"]
    assert contract_diffs(*CHAT, _raw(bare)) == []
    expected = {"status": 200, "content_type": "application/json", "body": normalize(PLAIN)}
    check_golden(expected, _raw(bare), "shape", "chat/hello", CHAT)
    with pytest.raises(ConformanceFailure) as failure:
        check_golden(expected, _raw(bare), "exact", "chat/hello", CHAT)  # exact stays strict
    assert "logprobs" in str(failure.value.evidence["diffs"])
    with pytest.raises(ConformanceFailure) as failure:
        check_chat_completion_body(bare)  # what chat.json.body and parity.chat.json run
    assert failure.value.check == "chat_completion_body"


def test_shape_mode_leaves_event_keys_and_error_envelopes_to_their_features() -> None:
    # sequence_number is on every Responses event: responses.stream.event_order judges it
    delta = {"type": "response.function_call_arguments.delta", "item_id": "fc_1",
             "output_index": 0, "delta": "{"}
    raw = {"status": 200, "content_type": "text/event-stream",
           RAW: f"event: {delta['type']}\ndata: {json.dumps(delta)}\n\n"}
    assert not any("sequence_number" in d for d in contract_diffs("POST", "/v1/responses", raw))
    # an integer error.code is the error features' business (they accept it), not a golden's
    expected = {"status": 400, "content_type": "application/json",
                "body": {"error": {"message": "m", "type": "t", "param": None, "code": "c"}}}
    got = {"status": 400, "content_type": "application/json",
           "body": {"error": {"message": "m", "type": "t", "code": 400}}}
    assert compare_transcripts(expected, got, "shape") == []
    assert compare_transcripts(expected, got, "exact") != []


def test_shape_mode_judges_the_kinds_of_what_the_case_adds() -> None:
    expected = {"status": 200, "content_type": "application/json", "body": _with_call(CALL)}
    wrong = _with_call({**CALL, "function": {"name": "get_weather",
                                             "arguments": {"city": "Paris"}}})
    got = {"status": 200, "content_type": "application/json", "body": wrong}
    diffs = compare_transcripts(expected, got, "shape")
    assert diffs and "arguments" in diffs[0]


def test_a_thinking_block_without_its_signature_is_the_thinking_golden_s_to_catch() -> None:
    start = {"type": "content_block_start", "index": 0,
             "content_block": {"type": "thinking", "thinking": ""}}
    raw = {"status": 200, "content_type": "text/event-stream",
           RAW: f"event: content_block_start\ndata: {json.dumps(start)}\n\n"}
    assert contract_diffs("POST", "/v1/messages", raw)
    thinking = {"events": [{"event": "content_block_start", "data": {
        "type": "content_block_start", "index": 0,
        "content_block": {"type": "thinking", "thinking": "", "signature": ""}}}]}
    assert contract_diffs("POST", "/v1/messages", raw, thinking)
    # a golden whose recording has no thinking block leaves one a server adds to the features
    # that judge that stream (anthropic.stream.event_order, parity.anthropic.stream)
    plain = {"events": [{"event": "content_block_start", "data": {
        "type": "content_block_start", "index": 0,
        "content_block": {"type": "text", "text": ""}}}]}
    left = contract_diffs("POST", "/v1/messages", raw, plain)
    assert all(d.startswith("anthropic_event_order") for d in left), left  # (one event only)


def test_pings_and_role_chunks_have_no_place_in_the_order() -> None:
    start = {"event": "message_start", "data": {"type": "message_start"}}
    ping = {"event": "ping", "data": {"type": "ping"}}
    stop = {"event": "message_stop", "data": {"type": "message_stop"}}
    assert event_kinds([start, ping, stop]) == event_kinds([start, stop, ping, ping])
    role_first = [_chunk({"role": "assistant"}), _chunk({"content": "a"}), "[DONE]"]
    role_everywhere = [_chunk({"role": "assistant", "content": "a"}), "[DONE]"]
    expected = {"status": 200, "content_type": "text/event-stream", "events": role_first}
    got = {"status": 200, "content_type": "text/event-stream", "events": role_everywhere}
    assert compare_transcripts(expected, got, "shape") == []


def test_event_kinds_collapse_content_and_ignore_role_only_chunks() -> None:
    events = [_chunk({"role": "assistant"}), _chunk({"content": "a"}), _chunk({"content": "b"}),
              _chunk({}, "stop"), {"choices": [], "usage": {"total_tokens": 1}}, "[DONE]"]
    assert event_kinds(events) == ["content", "finish", "usage", "done"]
    merged = [_chunk({"role": "assistant", "content": "a"}), _chunk({}, "stop"), "[DONE]"]
    assert event_kinds(merged) == ["content", "finish", "done"]


def test_transcript_status_mismatch_is_reported_first() -> None:
    expected = {"status": 200, "content_type": "application/json", "body": BODY}
    got = {"status": 404, "content_type": "application/json", "body": {"error": "x"}}
    assert compare_transcripts(expected, got, "shape") == ["status: expected 200, got 404"]


def test_normalize_keeps_integer_ids() -> None:
    # a transcription segment's id is its index, not a generated identifier
    out = normalize({"id": "tr-1", "segments": [{"id": 0, "start": 0.0}]})
    assert out == {"id": "<id>", "segments": [{"id": 0, "start": 0.0}]}


SRT = "1\n00:00:00,000 --> 00:00:00,900\nhello\n"


def test_text_bodies_compare_line_by_line_in_exact_mode() -> None:
    expected = {"status": 200, "content_type": "application/x-subrip", "body_text": SRT}
    got = {**expected, "body_text": SRT.replace("00,900", "01,000")}
    assert compare_transcripts(expected, expected, "exact") == []
    diffs = compare_transcripts(expected, got, "exact")
    assert len(diffs) == 1 and diffs[0].startswith("body_text[1]: expected")
    assert compare_transcripts(expected, got, "shape") == []


def test_text_bodies_in_shape_mode() -> None:
    expected = {"status": 200, "content_type": "text/plain", "body_text": "hello\n"}
    assert compare_transcripts(expected, {**expected, "body_text": ""}, "shape") == [
        "body_text: expected a non-empty text"]
    as_json = {"status": 200, "content_type": "text/plain", "body": {"text": "hello"}}
    assert compare_transcripts(expected, as_json, "shape")[0].startswith(
        "body_text: expected text, got JSON")


def test_committed_goldens_are_well_formed() -> None:
    documents = load_documents()
    assert documents, "no goldens committed"
    for path, doc in documents:
        assert path.stem == doc["case"] and path.parent.name == doc["family"]
        assert {"status", "content_type"} <= set(doc["response"])
        assert {"events", "body", "body_text", "body_binary"} & set(doc["response"])


WAV = {"status": 200, "content_type": "audio/wav", "body_binary": binary_summary(b"RIFF1234")}


def test_binary_bodies_compare_by_digest_in_exact_mode_and_content_type_in_shape_mode() -> None:
    other = {**WAV, "body_binary": binary_summary(b"RIFF12345")}
    assert compare_transcripts(WAV, WAV, "exact") == []
    assert [d.split(":")[0] for d in compare_transcripts(WAV, other, "exact")] == [
        "body_binary.length", "body_binary.sha256"]
    assert compare_transcripts(WAV, other, "shape") == []
    assert compare_transcripts(WAV, {**other, "content_type": "audio/mpeg"}, "shape") == [
        "content-type: expected audio/wav, got audio/mpeg"]
    as_json = {"status": 200, "content_type": "audio/wav", "body": {}}
    assert compare_transcripts(WAV, as_json, "shape") == [
        "body_binary: expected a binary body, got JSON"]


def test_speech_sse_events_keep_their_kinds() -> None:
    events = [{"type": "speech.audio.delta", "audio": "AA"},
              {"type": "speech.audio.delta", "audio": "BB"},
              {"type": "speech.audio.done", "usage": {"total_tokens": 2}}]
    assert event_kinds(events) == ["speech.audio.delta", "speech.audio.done"]


def _golden(family: str, case: str) -> dict[str, Any]:
    return next(doc for _, doc in load_documents()
                if doc["family"] == family and doc["case"] == case)


def test_media_goldens_are_recorded_and_replayed_by_their_family() -> None:
    for family, cases in (("images", IMAGE_CASES), ("audio", SPEECH_CASES)):
        fixture = cases[0].fixture
        recorded = {doc["feature"] for _, doc in family_goldens(family, fixture)}
        assert recorded == {case.feature for case in cases}


def test_a_tampered_image_golden_fails_in_both_modes() -> None:
    """A changed seed or a wrong status in a recorded golden is a diff, not a PASS."""
    golden = _golden("images", "generations")["response"]
    reseeded = copy.deepcopy(golden)
    reseeded["body"]["data"][0]["seed"] += 1
    assert compare_transcripts(golden, golden, "exact") == []
    assert compare_transcripts(reseeded, golden, "exact") == [
        "body.data[0].seed: expected 1235, got 1234"]
    assert compare_transcripts({**golden, "status": 400}, golden, "shape") == [
        "status: expected 400, got 200"]


def test_a_tampered_speech_golden_fails_in_exact_mode() -> None:
    golden = _golden("audio", "speech_wav")["response"]
    tampered = {**golden, "body_binary": {**golden["body_binary"], "sha256": "0" * 64}}
    assert compare_transcripts(tampered, golden, "exact") == [
        f"body_binary.sha256: expected {'0' * 64}, got {golden['body_binary']['sha256']}"]
    assert compare_transcripts(tampered, golden, "shape") == []


def _sse_transcript(text: str) -> dict[str, Any]:
    from mlxcel_conformance.sse import parse_sse

    events = [{"event": e.event, "data": normalize(json.loads(e.data))}
              for e in parse_sse(text).events]
    return {"status": 200, "content_type": "text/event-stream", "events": events, RAW: text}


def test_named_streams_are_judged_by_their_state_machine_not_the_reference_order() -> None:
    import real_stream_corpus as corpus

    golden = next(doc for _, doc in load_documents() if doc["family"] == "anthropic"
                  and doc["case"] == "thinking_stream")
    real = corpus.read(corpus.find("anthropic-stream-thinking.sse"))
    request = ("POST", "/v1/messages")
    check_golden(golden["response"], _sse_transcript(real), "shape", "thinking", request)
    # a second block started before the first one stopped breaks the contract
    events = list(corpus.stream("anthropic-stream-thinking.sse").events)
    stop = next(i for i, e in enumerate(events) if e.event == "content_block_stop")
    events.insert(stop + 2, events.pop(stop))
    with pytest.raises(ConformanceFailure, match="anthropic_event_order"):
        check_golden(golden["response"], _sse_transcript(corpus.to_text(events)), "shape",
                     "thinking", request)


def test_every_extension_golden_exists() -> None:
    from mlxcel_conformance.golden_cases import EXTENSION_GOLDENS, golden_extension
    from mlxcel_conformance.profiles import ALL_EXTENSIONS

    recorded = {f"{doc['family']}/{doc['case']}": doc for _, doc in load_documents()}
    for name, extension in EXTENSION_GOLDENS.items():
        assert name in recorded and extension in ALL_EXTENSIONS, name
        assert golden_extension(recorded[name]) == extension
    assert golden_extension(recorded["chat/hello"]) is None


def _terminal(kind: str, reason: str | None) -> dict[str, Any]:
    details = {"reason": reason} if reason else None
    return {"event": kind, "data": {"type": kind, "response": {
        "status": kind.rsplit(".", 1)[-1], "incomplete_details": details}}}


def test_a_responses_stream_cut_at_max_output_tokens_is_not_a_wrong_end() -> None:
    created = {"event": "response.created", "data": {"type": "response.created"}}
    expected = {"status": 200, "content_type": "text/event-stream",
                "events": [created, _terminal("response.completed", None)]}

    def diffs(end: dict[str, Any]) -> list[str]:
        got = {"status": 200, "content_type": "text/event-stream", "events": [created, end]}
        return compare_transcripts(expected, got, "shape")

    assert diffs(_terminal("response.incomplete", "max_output_tokens")) == []
    # cut for another reason, or failed: still the wrong end
    assert diffs(_terminal("response.incomplete", "content_filter"))
    assert diffs(_terminal("response.failed", None))
