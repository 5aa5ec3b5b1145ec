"""The llama-server README checks (``checks/llama_native_docs.py``) accept what llama-server
itself sends (bodies recorded from llama-server built from llama.cpp, serving the qwen3-tiny
fixture converted to GGUF) and what the reference sends, and reject each documented property
broken."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from real_stream_corpus import rejects

from mlxcel_conformance.checks.llama_native_docs import (
    check_native_context_exceeded,
    check_native_error_body,
    check_native_post_sampling_probs,
    check_native_prompt_progress,
    check_native_props_shape,
    check_native_slots_shape,
    check_native_timings_per_token,
)

PARAMS = {"n_predict": -1, "seed": 4294967295, "temperature": 0.8, "top_k": 40, "top_p": 0.95,
          "min_p": 0.05, "samplers": ["penalties", "dry", "top_k"]}
# llama-server's GET /props (trimmed: the template and the remaining params)
LLAMA_PROPS: dict[str, Any] = {
    "default_generation_settings": {"params": PARAMS, "n_ctx": 512},
    "total_slots": 2, "model_alias": "qwen3-tiny.gguf", "model_path": "qwen3-tiny.gguf",
    "modalities": {"vision": False, "video": False, "audio": False},
    "chat_template": "{%- if tools %}...", "chat_template_caps": {"supports_tools": True},
    "build_info": "b1-0c1e570", "is_sleeping": False,
}
# llama-server's GET /slots: an unused slot, and one that ran a request
LLAMA_SLOTS: list[dict[str, Any]] = [
    {"id": 0, "n_ctx": 512, "speculative": False, "is_processing": False},
    {"id": 1, "n_ctx": 512, "speculative": False, "is_processing": False, "id_task": 1,
     "params": PARAMS, "next_token": [{"has_next_token": False, "has_new_line": False,
                                       "n_remain": -1, "n_decoded": 0}]},
]
LLAMA_CONTEXT_ERROR = {"error": {
    "code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 701, "n_ctx": 512,
    "message": "request (701 tokens) exceeds the available context size (512 tokens), try "
               "increasing it"}}
# llama-server's /completion stream with return_progress (prompt of 6 tokens)
LLAMA_PROGRESS: list[dict[str, Any]] = [
    {"index": 0, "content": "", "tokens": [0], "stop": False, "tokens_predicted": 0,
     "tokens_evaluated": 6, "prompt_progress": {"total": 6, "cache": 0, "processed": 0,
                                                "time_ms": 0}},
    {"index": 0, "content": "", "tokens": [0], "stop": False, "tokens_predicted": 0,
     "tokens_evaluated": 6, "prompt_progress": {"total": 6, "cache": 0, "processed": 6,
                                                "time_ms": 2}},
    {"index": 0, "content": '{"', "tokens": [283], "stop": False, "tokens_predicted": 1,
     "tokens_evaluated": 6},
]
TIMINGS = {"cache_n": 0, "prompt_n": 6, "prompt_ms": 2.3, "prompt_per_token_ms": 0.38,
           "prompt_per_second": 2616.6, "predicted_n": 1, "predicted_ms": 0.4,
           "predicted_per_token_ms": 0.4, "predicted_per_second": 2500.0}


def test_llama_server_bodies_pass() -> None:
    check_native_props_shape(LLAMA_PROPS)
    check_native_slots_shape(LLAMA_SLOTS, 2)
    check_native_context_exceeded(400, LLAMA_CONTEXT_ERROR, 701, 512)
    check_native_prompt_progress(LLAMA_PROGRESS, 6)
    check_native_timings_per_token([{**LLAMA_PROGRESS[2], "timings": TIMINGS}])
    check_native_error_body({"error": {"code": 401, "message": "Invalid API Key",
                                       "type": "authentication_error"}}, 401)


def test_reference_slot_shape_passes() -> None:
    reference = [{"id": 0, "id_task": -1, "n_ctx": 512, "speculative": False,
                  "is_processing": False, "params": PARAMS,
                  "next_token": {"has_next_token": True, "has_new_line": False,
                                 "n_remain": -1, "n_decoded": 0},
                  "state": "idle", "model": "qwen3-tiny", "context_size": 512},
                 {"id": 1, "id_task": -1, "n_ctx": 512, "speculative": False,
                  "is_processing": False, "params": PARAMS, "state": "queued"}]
    check_native_slots_shape(reference[:1], 1)
    check_native_slots_shape(reference, 1)  # queued entries after the slots are allowed


def _broken(body: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(body)
    node = out
    for key in path[:-1]:
        node = node[key]
    if value is KeyError:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


@pytest.mark.parametrize(("path", "value"), [
    (("default_generation_settings", "params"), KeyError),
    (("default_generation_settings", "n_ctx"), "512"),
    (("default_generation_settings", "params", "temperature"), KeyError),
    (("model_path",), KeyError), (("total_slots",), 0), (("modalities",), ["vision"]),
    (("build_info",), None),
])
def test_broken_props_fail(path: tuple[Any, ...], value: Any) -> None:
    with rejects("native_props_shape"):
        check_native_props_shape(_broken(LLAMA_PROPS, path, value))


def test_broken_slots_fail() -> None:
    with rejects("native_slots_shape"):
        check_native_slots_shape(LLAMA_SLOTS[1:], 2)  # slot 0 missing
    with rejects("native_slots_shape"):
        check_native_slots_shape(_broken(LLAMA_SLOTS, (0, "is_processing"), "no"), 2)
    with rejects("native_slots_shape"):
        check_native_slots_shape(_broken(LLAMA_SLOTS, (1, "next_token"), "x"), 2)


def test_broken_errors_fail() -> None:
    with rejects("native_error_body"):
        check_native_error_body({"error": {"code": "400", "message": "x", "type": "t"}}, 400)
    with rejects("native_error_body"):
        check_native_error_body({"error": "bad"}, 400)
    with rejects("native_context_exceeded"):
        check_native_context_exceeded(200, {"content": ""}, 701, 512)
    with rejects("native_context_exceeded"):
        check_native_context_exceeded(400, _broken(LLAMA_CONTEXT_ERROR, ("error", "n_ctx"), 9),
                                      701, 512)


def test_broken_progress_and_timings_fail() -> None:
    with rejects("native_prompt_progress"):
        check_native_prompt_progress(LLAMA_PROGRESS[2:], 6)  # none sent
    with rejects("native_prompt_progress"):
        check_native_prompt_progress(LLAMA_PROGRESS, 7)  # total is not the prompt
    with rejects("native_prompt_progress"):
        check_native_prompt_progress(
            _broken(LLAMA_PROGRESS, (1, "prompt_progress", "processed"), 9), 6)
    with rejects("native_timings_per_token"):
        check_native_timings_per_token(LLAMA_PROGRESS)  # a token without timings
    with rejects("native_timings_per_token"):
        check_native_timings_per_token([{**LLAMA_PROGRESS[2], "timings": {"prompt_n": 1}}])


# README "POST /completion": with post_sampling_probs, prob and top_probs (here as the
# reference sends them for a top_k 2 step: fewer than n_probs entries).
POST_SAMPLING = {"content": " a", "completion_probabilities": [{
    "id": 264, "token": " a", "bytes": [32, 97], "prob": 0.62,
    "top_probs": [{"id": 264, "token": " a", "bytes": [32, 97], "prob": 0.62},
                  {"id": 279, "token": " the", "bytes": [32, 116, 104, 101], "prob": 0.38}]}]}


def test_post_sampling_probs() -> None:
    check_native_post_sampling_probs(POST_SAMPLING, 3)
    entry = ("completion_probabilities", 0)
    for broken, n_probs in (
            (_broken(POST_SAMPLING, (*entry, "prob"), 1.5), 3),  # not a probability
            (_broken(POST_SAMPLING, (*entry, "top_probs", 1, "prob"), -0.1), 3),
            ({"content": " a", "completion_probabilities": [{
                "id": 264, "token": " a", "bytes": [32, 97], "logprob": -0.4,
                "top_logprobs": []}]}, 3),  # the pre-sampling shape
            (POST_SAMPLING, 1),  # more than n_probs
            ({"content": ""}, 3)):  # nothing reported
        with rejects("native_post_sampling_probs"):
            check_native_post_sampling_probs(broken, n_probs)
