"""llama-server's documented request shapes, as its clients send them, each test citing the
section of llama-server's README (``tools/server/README.md``) it follows: the route aliases,
``grammar`` and ``json_schema``, ``n_probs`` in a stream, ``post_sampling_probs``,
``timings_per_token``, ``return_progress``, token and mixed prompts, ``/props`` and
``/slots``, and errors (a prompt over the context included) in llama-server's shape. Run
against llama-server itself and the reference alike (the ``llama-native`` family)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from mlxcel_conformance.checks.health_answers import judge_health_alias
from mlxcel_conformance.checks.llama_native import (
    check_native_completion_body,
    check_native_stream_sequence,
)
from mlxcel_conformance.checks.llama_native_docs import (
    check_native_context_exceeded,
    check_native_error_body,
    check_native_post_sampling_probs,
    check_native_prompt_progress,
    check_native_props_shape,
    check_native_slots_shape,
    check_native_timings_per_token,
)
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import response_of
from mlxcel_conformance.sse import parse_sse

from .test_llama_native import PROMPT, native_json

FAMILY = "llama-native"
YES_NO = 'root ::= "yes" | "no"'


def _payload(**fields: Any) -> dict[str, Any]:
    return {"prompt": PROMPT, "n_predict": 8, "temperature": 0, **fields}


def _stream_events(client: SuiteClient, payload: dict[str, Any]) -> list[dict[str, Any]]:
    result = client.stream("/completion", {**payload, "stream": True})
    expect_status(result, 200)
    check_native_stream_sequence(result.text)
    return [json.loads(e.data) for e in parse_sse(result.text).events]


def _tokens(client: SuiteClient, text: str) -> list[int]:
    tokens: list[int] = json_body(client.post("/tokenize", {"content": text}))["tokens"]
    return tokens


@pytest.mark.conformance(family=FAMILY, feature="native.aliases")
def test_route_aliases_answer_like_their_routes(client: SuiteClient) -> None:
    """README: "/v1/health also works", GET /models, POST /completions (the /completion
    shape); llama-server also serves POST /chat/completions beside /v1/chat/completions. A busy
    server's /v1/health may answer its documented 503 while /health does too
    (checks/health_answers.py): another client filling the slots is no defect of the alias."""
    judge_health_alias(client.get)
    models = client.get("/models")
    expect_status(models, 200)
    if not isinstance(json_body(models).get("data"), list):
        fail("native_aliases", "GET /models must list the models in data", body=json_body(models))
    plain = native_json(client, _payload())
    alias = native_json(client, _payload(), path="/completions")
    if alias["content"] != plain["content"]:
        fail("native_aliases", "/completions and /completion differ on a greedy prompt",
             completion=plain["content"], completions=alias["content"])
    chat = {"messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 6,
            "temperature": 0}
    bodies = [json_body(client.post(path, chat)) for path in ("/v1/chat/completions",
                                                               "/chat/completions")]
    texts = [b.get("choices", [{}])[0].get("message", {}).get("content") for b in bodies]
    if texts[0] is None or texts[0] != texts[1]:
        fail("native_aliases", "/chat/completions must answer as /v1/chat/completions",
             v1=bodies[0], alias=bodies[1])


@pytest.mark.conformance(family=FAMILY, feature="native.grammar")
def test_grammar_constrains_the_output(client: SuiteClient) -> None:
    """README "POST /completion", `grammar`: GBNF grammar-based sampling."""
    body = native_json(client, _payload(grammar=YES_NO))
    if body["content"] not in ("yes", "no"):
        fail("native_grammar", f"the output must match {YES_NO!r}", content=body["content"])
    status, error = response_of(client.post("/completion", _payload(grammar="root ::= (")))
    if status != 400:
        fail("native_grammar", f"an invalid grammar must answer 400, not {status}", body=error)
    check_native_error_body(error, 400)


@pytest.mark.conformance(family=FAMILY, feature="native.json_schema")
def test_json_schema_constrains_the_output(client: SuiteClient) -> None:
    """README "POST /completion", `json_schema`: grammar-based sampling from a schema. The
    contract holds for a finished output; one cut by n_predict may be a prefix."""
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    body = native_json(client, _payload(json_schema=schema, n_predict=64))
    if body["stop_type"] == "limit":
        return
    try:
        jsonschema.validate(json.loads(body["content"]), schema)
    except (ValueError, jsonschema.ValidationError) as exc:
        fail("native_json_schema", f"a finished output must satisfy the schema: {exc}",
             content=body["content"])


@pytest.mark.conformance(family=FAMILY, feature="native.token_prompt_mixed")
def test_mixed_token_and_string_prompts(client: SuiteClient) -> None:
    """README "POST /completion", `prompt`: token ids and strings mixed in one prompt; several
    prompts of mixed types answer an array."""
    head, tail = PROMPT.split(" ", 1)
    by_text = native_json(client, _payload())
    mixed = native_json(client, _payload(prompt=[*_tokens(client, head), " " + tail]))
    if mixed["content"] != by_text["content"]:
        fail("prompt_forms", "a mixed [ids..., string] prompt gave different greedy text",
             text=by_text["content"], mixed=mixed["content"])
    both = native_json(client, _payload(prompt=[_tokens(client, PROMPT), PROMPT]))
    if not isinstance(both, list) or [b["content"] for b in both] != [by_text["content"]] * 2:
        fail("prompt_forms", "[[ids...], string] must answer an array, one object per prompt",
             body=both)


@pytest.mark.conformance(family=FAMILY, feature="native.n_probs_stream")
def test_n_probs_in_a_stream(client: SuiteClient) -> None:
    """README "POST /completion", `n_probs` and the `completion_probabilities` response
    field: per generated token, at most n_probs alternatives."""
    events = _stream_events(client, _payload(n_probs=2))
    for event in events[:-1]:
        if not event.get("content"):
            continue
        probs = event.get("completion_probabilities")
        if not isinstance(probs, list) or not probs or any(
                len(p.get("top_logprobs") or []) > 2 for p in probs):
            fail("native_n_probs", "a streamed token must carry completion_probabilities with "
                 "at most n_probs entries", event=event)


@pytest.mark.conformance(family=FAMILY, feature="native.post_sampling_probs")
def test_post_sampling_probs(client: SuiteClient) -> None:
    """README "POST /completion", `post_sampling_probs` and the `completion_probabilities`
    response field."""
    body = native_json(client, _payload(n_probs=3, post_sampling_probs=True))
    check_native_post_sampling_probs(body, 3)


@pytest.mark.conformance(family=FAMILY, feature="native.timings_per_token")
def test_timings_per_token(client: SuiteClient) -> None:
    """README "POST /completion", `timings_per_token`."""
    events = _stream_events(client, _payload(timings_per_token=True))
    check_native_timings_per_token(events[:-1])


@pytest.mark.conformance(family=FAMILY, feature="native.return_progress")
def test_return_progress(client: SuiteClient) -> None:
    """README "POST /completion", `return_progress`."""
    events = _stream_events(client, _payload(return_progress=True, cache_prompt=False))
    check_native_prompt_progress(events[:-1], events[-1]["tokens_evaluated"])
    check_native_completion_body({**events[-1], "content": ""}, 8)


@pytest.mark.conformance(family=FAMILY, feature="native.props")
def test_props_documented_shape(client: SuiteClient) -> None:
    """README "GET /props"."""
    response = client.get("/props")
    expect_status(response, 200)
    check_native_props_shape(json_body(response))


@pytest.mark.conformance(family=FAMILY, feature="native.slots")
def test_slots_documented_shape(client: SuiteClient) -> None:
    """README "GET /slots" (enabled by default)."""
    total = json_body(client.get("/props"))["total_slots"]
    response = client.get("/slots")
    if response.status_code in (404, 501):
        pytest.skip("UNSUPPORTED: /slots is disabled on this server")
    expect_status(response, 200)
    check_native_slots_shape(json_body(response), total)


@pytest.mark.conformance(family=FAMILY, feature="native.context_exceeded", destructive=True)
def test_prompt_over_the_context(client: SuiteClient) -> None:
    """README "API errors": the error shape, for a prompt longer than a slot's context."""
    n_ctx = json_body(client.get("/props"))["default_generation_settings"]["n_ctx"]
    unit = _tokens(client, "hello world. ")
    prompt = (unit * (n_ctx // len(unit) + 8))[: n_ctx + 16]
    status, body = response_of(client.post("/completion", _payload(prompt=prompt, n_predict=2)))
    check_native_context_exceeded(status, body, len(prompt), n_ctx)
    native_json(client, _payload(n_predict=2))  # still serving
