"""Sampling behaviour through the HTTP API: seeded determinism under batching, logprobs that
describe the sampled token, stop strings held back, and mlxcel's extra sampling fields."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from mlxcel_conformance.checks.engine_checks import (
    check_logprobs_match_sampled_token,
    check_loop_stopped,
    check_seed_after_cache_hit,
    check_seeded_determinism,
    check_stop_string_not_leaked,
)
from mlxcel_conformance.checks.openai_common import chat_logprobs_entries
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import CHAT_PATH, chat_payload, message_content
from mlxcel_conformance.readers import read_chat, read_stream
from mlxcel_conformance.surfaces import require_surface


def _story(model_name: str | None, **fields: object) -> dict[str, object]:
    return chat_payload(model_name, "Tell me a story.", max_tokens=24, **fields)


@pytest.mark.conformance(family="mlxcel-ext", feature="sampling.seed.batched", extension="sampling")
def test_seed_same_text_alone_and_batched(client: SuiteClient, model_name: str | None) -> None:
    payload = _story(model_name, temperature=1.0, seed=1234)
    alone = message_content(read_chat(client, payload))
    # Four at once, so both copies fit one batch of the default 4 slots beside two neighbours.
    others = [_story(model_name, temperature=1.0, seed=s) for s in (1, 2)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(read_chat, client, p) for p in [payload, *others, payload]]
        bodies = [f.result() for f in futures]
    check_seeded_determinism(alone, [message_content(bodies[0]), message_content(bodies[-1])])


# The issue-42 sequence: a seeded /completion cold, then after another prompt that shares its
# prefix filled the prompt cache (with the cache hit, and with cache_prompt: false).
_PREFIX = ("The old lighthouse keeper climbed the spiral stairs every evening to light the lamp. "
           "He had done this for forty years, and the village below trusted him completely. ")


def _seeded_run(client: SuiteClient, prompt: str, **fields: object) -> tuple[list[int],
                                                                            list[float]]:
    answer = client.post("/completion", {"prompt": prompt, "temperature": 0.9, "seed": 1026,
                                         "n_predict": 40, "n_probs": 1, **fields})
    expect_status(answer, 200)
    probs = json_body(answer).get("completion_probabilities") or []
    return [int(p["id"]) for p in probs], [float(p["logprob"]) for p in probs]


@pytest.mark.conformance(family="mlxcel-ext", feature="sampling.seed.cache_hit",
                         extension="sampling")
def test_seed_after_another_prompt_filled_the_cache(client: SuiteClient) -> None:
    require_surface(client, "/v1/cache/reset")
    prompt, other = _PREFIX + "One stormy night, he noticed", _PREFIX + "On the morning of"
    expect_status(client.post("/v1/cache/reset"), 200)
    cold = _seeded_run(client, prompt)
    expect_status(client.post("/v1/cache/reset"), 200)
    _seeded_run(client, other, seed=5, n_predict=1)
    uncached = _seeded_run(client, prompt, cache_prompt=False)
    hit = _seeded_run(client, prompt)
    check_seed_after_cache_hit(cold, hit, uncached)


@pytest.mark.conformance(family="chat", feature="chat.logprobs.sampled_token")
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
def test_logprobs_describe_sampled_token(
    client: SuiteClient, model_name: str | None, stream: bool
) -> None:
    payload = _story(model_name, temperature=0, logprobs=True, top_logprobs=3)
    if stream:
        result = read_stream(client, payload)
        entries, content = chat_logprobs_entries(result.chunks), result.content
    else:
        body = read_chat(client, payload)
        entries, content = chat_logprobs_entries(body), message_content(body)
    check_logprobs_match_sampled_token(entries, content, greedy=True)


# A stop string spanning token boundaries: the same feature as test_chat's mid-text stop. One
# unstopped greedy reply places the stop for both the body and the stream.
@pytest.mark.conformance(family="chat", feature="chat.stop.not_leaked")
def test_stop_string_never_leaks(client: SuiteClient, model_name: str | None) -> None:
    base = _story(model_name, temperature=0)
    unstopped = message_content(read_chat(client, base))
    if len(unstopped) < 8:
        pytest.skip("the model's reply is too short to place a stop string inside it")
    stop = unstopped[5:8]  # spans token boundaries on most tokenizers
    payload = {**base, "stop": [stop]}
    check_stop_string_not_leaked(message_content(read_chat(client, payload)), stop, unstopped)
    check_stop_string_not_leaked(read_stream(client, payload).content, stop, unstopped)


EXTENSION_FIELDS: dict[str, dict[str, object]] = {
    "p_less": {"p_less": True},
    "dry": {"dry_multiplier": 0.8, "dry_base": 1.75, "dry_allowed_length": 2,
            "dry_penalty_last_n": 0, "dry_sequence_breakers": [10]},
    "xtc": {"xtc_probability": 0.5, "xtc_threshold": 0.1},
    "penalties": {"repetition_penalty": 1.1, "repetition_context_size": 32,
                  "presence_penalty": 0.5, "frequency_penalty": 0.5},
    "loop_detection": {"max_pattern_size": 4, "min_pattern_size": 1, "min_count": 3},
    "cache_prompt_root": {"cache_prompt": False},
    "cache_prompt_nested": {"extra_body": {"cache_prompt": False}},
}


@pytest.mark.conformance(family="mlxcel-ext", feature="sampling.extension_fields",
                         extension="sampling")
@pytest.mark.parametrize("name", sorted(EXTENSION_FIELDS))
def test_extension_fields_accepted(client: SuiteClient, model_name: str | None, name: str) -> None:
    payload = _story(model_name, temperature=0.7, seed=5, **EXTENSION_FIELDS[name])
    read_chat(client, payload)


@pytest.mark.conformance(family="mlxcel-ext", feature="sampling.extension_fields.invalid",
                         extension="sampling")
@pytest.mark.parametrize("field,value", [("dry_multiplier", -1), ("xtc_probability", 2),
                                         ("p_less", "yes"), ("min_count", -1)])
def test_extension_fields_rejected(
    client: SuiteClient, model_name: str | None, field: str, value: object
) -> None:
    response = client.post(CHAT_PATH, _story(model_name, **{field: value}))
    expect_status(response, 400)
    json_body(response)


@pytest.mark.conformance(family="mlxcel-ext", feature="sampling.loop_detection",
                         extension="sampling")
def test_loop_detection_stops_repetition(client: SuiteClient, model_name: str | None) -> None:
    # logit_bias forces one token forever; loop detection must end it long before max_tokens.
    token = client.post("/tokenize", {"content": "a"}).json()["tokens"][0]
    payload = chat_payload(model_name, "hi", max_tokens=60, temperature=0, ignore_eos=True,
                           logit_bias={str(token): 100}, max_pattern_size=2, min_count=4)
    body = read_chat(client, payload)
    check_loop_stopped(body["usage"]["completion_tokens"], 60, body["choices"][0]["finish_reason"])
