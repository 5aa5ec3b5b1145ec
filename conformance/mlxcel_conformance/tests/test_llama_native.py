"""llama-server's native routes: /completion (JSON and stream), /infill, /apply-template."""

from __future__ import annotations

import time
from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_llama
from mlxcel_conformance.checks.llama_native import (
    check_native_completion_body,
    check_native_n_probs,
    check_native_stream_sequence,
)
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import check_schema, check_schema_events, response_of

PATH = "/completion"
PROMPT = "The capital of France is"


def _payload(**fields: Any) -> dict[str, Any]:
    return {"prompt": PROMPT, "n_predict": 8, "temperature": 0, **fields}


def native_json(client: SuiteClient, payload: dict[str, Any], path: str = PATH) -> Any:
    response = client.post(path, payload)
    expect_status(response, 200)
    body = json_body(response)
    check_schema("POST", path, 200, body)
    for item in body if isinstance(body, list) else [body]:
        check_native_completion_body(item, payload.get("n_predict"))
    return body


def native_stream(client: SuiteClient, payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    result = client.stream(PATH, {**payload, "stream": True})
    expect_status(result, 200)
    check_schema_events("POST", PATH, result)
    return check_native_stream_sequence(result.text)


@pytest.mark.conformance(family="llama-native", feature="native.completion.body")
def test_native_completion_body(client: SuiteClient) -> None:
    native_json(client, _payload())


@pytest.mark.conformance(family="llama-native", feature="native.completion.stream")
def test_native_stream_matches_json(client: SuiteClient) -> None:
    body = native_json(client, _payload())
    streamed, final = native_stream(client, _payload())
    check_native_completion_body(final, 8)
    if streamed != body["content"]:
        fail("stream_matches_json", "greedy /completion stream differs from the JSON content",
             streamed=streamed, non_streamed=body["content"])


@pytest.mark.conformance(family="llama-native", feature="native.completion.token_prompt")
def test_native_token_prompt_matches_text(client: SuiteClient) -> None:
    tokens = json_body(client.post("/tokenize", {"content": PROMPT}))["tokens"]
    by_text = native_json(client, _payload())
    by_ids = native_json(client, _payload(prompt=tokens))
    if by_ids["content"] != by_text["content"]:
        fail("prompt_forms", "token-id prompt and text prompt gave different greedy text",
             text=by_text["content"], ids=by_ids["content"])
    if by_ids["tokens_evaluated"] != len(tokens):
        fail("native_completion_body", "tokens_evaluated differs from the prompt length",
             tokens_evaluated=by_ids["tokens_evaluated"], prompt_tokens=len(tokens))


@pytest.mark.conformance(family="llama-native", feature="native.completion.n_probs")
def test_native_n_probs(client: SuiteClient) -> None:
    body = native_json(client, _payload(n_probs=3))
    check_native_n_probs(body, 3)
    greedy = [entry["top_logprobs"][0]["id"] == entry["id"]
              for entry in body["completion_probabilities"]]
    if not all(greedy):
        fail("native_n_probs", "greedy decoding sampled a token that is not the most likely",
             probabilities=body["completion_probabilities"])


@pytest.mark.conformance(family="llama-native", feature="native.completion.stop_word")
def test_native_stop_word(client: SuiteClient) -> None:
    full = native_json(client, _payload(n_predict=16))["content"]
    if len(full) < 4:
        pytest.skip("the model's greedy continuation is too short to place a stop word")
    word = full[2:4]
    body = native_json(client, _payload(n_predict=16, stop=[word]))
    if word in body["content"] or body["stop_type"] != "word" or body["stopping_word"] != word:
        fail("native_stop_word", "stop word not honoured as llama-server does "
             "(excluded from content, stop_type word, stopping_word set)",
             stop=word, body={k: body[k] for k in ("content", "stop_type", "stopping_word")})


@pytest.mark.conformance(family="llama-native", feature="native.completion.n_predict_zero")
def test_native_n_predict_zero_evaluates_only(client: SuiteClient) -> None:
    body = native_json(client, _payload(n_predict=0))
    if body["content"] or body["tokens_predicted"] != 0:
        fail("native_completion_body", "n_predict 0 must generate nothing", body=body)


@pytest.mark.conformance(family="llama-native", feature="native.completion.return_tokens")
def test_native_return_tokens(client: SuiteClient) -> None:
    body = native_json(client, _payload(return_tokens=True))
    if len(body["tokens"]) != body["tokens_predicted"] and body["stop_type"] == "limit":
        fail("native_return_tokens", "tokens must list every generated id", body=body)
    text = json_body(client.post("/detokenize", {"tokens": body["tokens"]}))["content"]
    if text != body["content"]:
        fail("native_return_tokens", "detokenize(tokens) differs from content",
             tokens=body["tokens"], content=body["content"], detokenized=text)


@pytest.mark.conformance(family="llama-native", feature="native.completion.multi_prompt")
def test_native_several_prompts_answer_an_array(client: SuiteClient) -> None:
    single = native_json(client, _payload())
    both = native_json(client, _payload(prompt=[PROMPT, "Hello"]))
    if not isinstance(both, list) or [b["index"] for b in both] != [0, 1]:
        fail("native_multi_prompt", "several prompts must answer an array in prompt order",
             body=both)
    if both[0]["content"] != single["content"]:
        fail("native_multi_prompt", "the first prompt's greedy text changed in a batch",
             single=single["content"], batched=both[0]["content"])


@pytest.mark.conformance(family="llama-native", feature="native.completion.dry")
def test_native_dry_breaks_a_repetition(client: SuiteClient) -> None:
    base = native_json(client, _payload(n_predict=16, return_tokens=True))["tokens"]
    runs = [base[i] == base[i + 1] == base[i + 2] for i in range(len(base) - 2)]
    if not any(runs):
        pytest.skip("the greedy continuation does not repeat a token; DRY has nothing to break")
    # README: "Only a JSON array of strings is accepted" (llama-server refuses an empty one);
    # a breaker that never occurs leaves every repetition to the penalty.
    dry = native_json(client, _payload(n_predict=16, return_tokens=True, dry_multiplier=2.0,
                                       dry_allowed_length=1, dry_sequence_breakers=["\u0007"]))
    if dry["tokens"] == base:
        fail("native_dry", "DRY settings had no effect on a repeating greedy continuation",
             tokens=base)


BAD_BODIES: dict[str, Any] = {
    "prompt_missing": {"n_predict": 4},
    "prompt_object": {"prompt": {"text": "x"}},
    "n_predict_below_minus_one": {"prompt": "x", "n_predict": -2},
    "stream_string": {"prompt": "x", "stream": "yes"},
    "token_out_of_vocab": {"prompt": [1, 2**31 - 1]},
}


@pytest.mark.conformance(family="llama-native", feature="native.completion.errors",
                         destructive=True)
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_native_bad_body_is_400(client: SuiteClient, case: str) -> None:
    status, body = response_of(client.post(PATH, BAD_BODIES[case]))
    check_error_body_llama(body, status=status, expected=400, case=case,
        source="llama-server README, POST /completion options; API errors")
    native_json(client, _payload(n_predict=2))  # still serving


@pytest.mark.conformance(family="llama-native", feature="native.completion.response_format",
                         extension="refusals")
def test_native_response_format_is_refused(client: SuiteClient) -> None:
    """The reference refuses ``response_format`` on /completion (use ``json_schema``);
    llama-server takes it."""
    payload = {"prompt": "x", "response_format": {"type": "json_object"}}
    status, body = response_of(client.post(PATH, payload))
    check_error_body_llama(body, status=status, expected=400)


@pytest.mark.conformance(family="llama-native", feature="native.infill")
def test_infill_answers_completion_or_501(client: SuiteClient) -> None:
    payload = {"input_prefix": "def add(a, b):\n    return ", "input_suffix": "\n",
               "n_predict": 4, "temperature": 0}
    status, body = response_of(client.post("/infill", payload))
    if status == 501:
        error = check_error_body_llama(body, status=status, expected=501)
        if error.get("type") != "not_supported_error":
            fail("infill_not_supported", "a model without FIM tokens answers 501 "
                 "not_supported_error", body=body)
        return
    expect_status(client.post("/infill", payload), 200)
    check_native_completion_body(body, 4)


@pytest.mark.conformance(family="llama-native", feature="native.apply_template")
def test_apply_template_matches_chat_prompt(client: SuiteClient) -> None:
    messages = [{"role": "user", "content": "Say hello."}]
    response = client.post("/apply-template", {"messages": messages})
    expect_status(response, 200)
    body = json_body(response)
    check_schema("POST", "/apply-template", 200, body)
    if "Say hello." not in body["prompt"]:
        fail("apply_template", "the rendered prompt does not contain the message", body=body)
    # The README does not say what no messages renders to: an error must be well formed.
    status, error = response_of(client.post("/apply-template", {"messages": []}))
    if status != 200:
        check_error_body_llama(error, status=status, expected=400)


@pytest.mark.conformance(family="llama-native", feature="native.completion.disconnect",
                         destructive=True)
def test_native_disconnect_frees_server(client: SuiteClient) -> None:
    started = time.monotonic()
    native_json(client, _payload(n_predict=4))
    baseline = time.monotonic() - started
    payload = _payload(n_predict=3000, stream=True, temperature=1.0, seed=3, ignore_eos=True)
    with client.http.stream("POST", PATH, json=payload) as response:
        for received, _ in enumerate(response.iter_lines()):
            if received >= 6:
                break
    started = time.monotonic()
    native_json(client, _payload(n_predict=4))
    elapsed = time.monotonic() - started
    if elapsed > max(5.0, 20 * baseline):
        fail("disconnect_frees_server",
             f"a 4-token /completion took {elapsed:.1f} s after a client left mid-stream "
             f"(baseline {baseline:.2f} s): the abandoned generation kept running",
             elapsed_s=round(elapsed, 2), baseline_s=round(baseline, 2))
