"""POST /v1/responses/compact, compaction replay, and `context_management` on /v1/responses
(with its mlx.compaction.* stream events), including the 400 context_length_exceeded cases."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import check_schema, response_of, with_model
from mlxcel_conformance.flows_typed import RESPONSES_PATH, responses_json, responses_stream

COMPACT_PATH = "/v1/responses/compact"
STORY = ("Once upon a time, a small robot named Pip lived in a quiet village by the sea. Every "
         "morning, Pip walked to the harbor to help the fishermen mend their nets. One stormy "
         "night, Pip climbed the old lighthouse and held up a bright lantern.")


def history(turns: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [{"role": "system", "content": "Be terse."}]
    for _ in range(turns):
        items += [{"role": "user", "content": "Tell me a story."},
                  {"role": "assistant", "content": [{"type": "output_text", "text": STORY}]}]
    return items + [{"role": "user", "content": "Count to five."}]


def input_tokens(client: SuiteClient, items: list[dict[str, Any]]) -> int:
    counted = client.post(f"{RESPONSES_PATH}/input_tokens", {"input": items})
    expect_status(counted, 200)
    return int(json_body(counted)["input_tokens"])


@pytest.mark.conformance(family="responses", feature="responses.compact", extension="compaction")
def test_compact_shortens_and_replays(client: SuiteClient, model_name: str | None) -> None:
    items = history(3)
    answer = client.post(COMPACT_PATH, with_model(model_name, {
        "input": items, "keep_tokens": 16, "max_output_tokens": 16}))
    expect_status(answer, 200)
    body = json_body(answer)
    check_schema("POST", COMPACT_PATH, 200, body)
    output = body["output"]
    kinds = [item["type"] for item in output]
    if kinds.count("compaction") != 1 or output[0].get("role") != "system":
        fail("response_compaction", "output needs the kept system message and one compaction "
             "item", kinds=kinds)
    if input_tokens(client, output) >= input_tokens(client, items):
        fail("response_compaction", "the compacted history is not shorter", output=output)
    reply = responses_json(client, with_model(model_name, {
        "input": output, "max_output_tokens": 8, "temperature": 0}))
    if reply["status"] not in ("completed", "incomplete"):
        fail("response_compaction", "replaying the compacted output failed", body=reply)


@pytest.mark.conformance(family="responses", feature="responses.context_management",
                         extension="compaction")
def test_context_management_stream(client: SuiteClient, model_name: str | None) -> None:
    items = history(20)
    payload = with_model(model_name, {
        "input": items, "temperature": 0, "max_output_tokens": 8,
        "context_management": [{"type": "compaction", "compact_threshold": 64}]})
    stream = responses_stream(client, payload)
    kinds = [p["type"] for p in stream.payloads]
    if kinds[2:4] != ["mlx.compaction.started", "mlx.compaction.completed"]:
        fail("responses_event_order", "compaction events must follow response.in_progress",
             kinds=kinds[:6])
    done = stream.payloads[3]
    if not done["input_tokens_after"] < done["input_tokens_before"] == input_tokens(client,
                                                                                    items):
        fail("responses_event_order", "input_tokens_before/after are wrong", event=done)
    if stream.response["output"][0]["type"] != "compaction":
        fail("response_compaction", "output must start with the compaction item",
             output=stream.response["output"])


BAD_COMPACT: dict[str, dict[str, Any]] = {
    "stream": {"stream": True},
    "previous_response_id": {"previous_response_id": "resp_x"},
    "conversation": {"conversation": "conv_x"},
    "keep_tokens_zero": {"keep_tokens": 0},
    "max_output_tokens_over": {"max_output_tokens": 16385},
}


@pytest.mark.conformance(family="responses", feature="responses.compact.errors",
                         extension="compaction",
                         destructive=True)
@pytest.mark.parametrize("case", sorted(BAD_COMPACT))
def test_compact_rejects(client: SuiteClient, model_name: str | None, case: str) -> None:
    payload = with_model(model_name, {"input": history(1), **BAD_COMPACT[case]})
    status, body = response_of(client.post(COMPACT_PATH, payload))
    check_error_body_openai(body, status=status, expected=400)


@pytest.mark.conformance(family="responses", feature="responses.compact.context_length",
                         extension="compaction",
                         destructive=True)
@pytest.mark.parametrize("case", ["nothing_to_summarize", "longer_than_context"])
def test_compact_context_length_exceeded(client: SuiteClient, model_name: str | None,
                                         case: str) -> None:
    if case == "nothing_to_summarize":
        items: list[dict[str, Any]] = [{"role": "user", "content": "Say hello."}]
    else:
        context = client.get("/health").json().get("context_size") or 4096
        items = history(int(context) // 40)
    status, body = response_of(client.post(COMPACT_PATH, with_model(model_name,
                                                                    {"input": items})))
    error = check_error_body_openai(body, status=status, expected=400)
    if error.get("code") != "context_length_exceeded":
        fail("error_body_openai", "expected code context_length_exceeded", error=error)


@pytest.mark.conformance(family="responses", feature="responses.context_management.errors",
                         extension="compaction",
                         destructive=True)
@pytest.mark.parametrize("value", [[{"type": "compaction", "compact_threshold": 0}],
                                   [{"type": "compaction"}], [{"type": "other"}], "x"])
def test_context_management_rejects(client: SuiteClient, model_name: str | None,
                                    value: Any) -> None:
    payload = with_model(model_name, {"input": "hi", "context_management": value})
    status, body = response_of(client.post(RESPONSES_PATH, payload))
    check_error_body_openai(body, status=status, expected=400)
