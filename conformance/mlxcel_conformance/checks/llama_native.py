"""Checks on llama-server's native ``/completion``: the final object, its timings, and the
stream (partial objects with ``stop: false``, one final object, no ``[DONE]``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.sse import parse_sse

STOP_TYPES = frozenset({"none", "eos", "limit", "word"})
TIMING_FIELDS = ("prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
                 "predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0


@check("native_timings", severity=Severity.MEDIUM,
       description="/completion timings: llama-server's eight fields, non-negative, counts agree")
def check_native_timings(body: Mapping[str, Any]) -> None:
    timings = body.get("timings")
    if not isinstance(timings, dict):
        fail("native_timings", "timings must be an object", body=body)
    missing = [k for k in TIMING_FIELDS if not _number(timings.get(k))]
    if missing:
        fail("native_timings", f"timings fields missing or negative: {missing}", timings=timings)
    if timings["predicted_n"] != body.get("tokens_predicted"):
        fail("native_timings", "timings.predicted_n differs from tokens_predicted",
             timings=timings, tokens_predicted=body.get("tokens_predicted"))
    if timings["prompt_n"] > body.get("tokens_evaluated", 0):
        fail("native_timings", "timings.prompt_n exceeds tokens_evaluated", timings=timings,
             tokens_evaluated=body.get("tokens_evaluated"))


@check("native_completion_body", severity=Severity.HIGH,
       description="/completion final object: content, stop true, token counts, stop_type")
def check_native_completion_body(body: Any, n_predict: int | None = None) -> None:
    if not isinstance(body, dict):
        fail("native_completion_body", "the body must be a JSON object", body=body)
    if not isinstance(body.get("content"), str):
        fail("native_completion_body", "content must be a string", body=body)
    if body.get("stop") is not True:
        fail("native_completion_body", "the final object must have stop: true", body=body)
    for key in ("tokens_predicted", "tokens_evaluated"):
        if not is_int(body.get(key)) or body[key] < 0:
            fail("native_completion_body", f"{key} must be a non-negative integer", body=body)
    if body.get("stop_type") not in STOP_TYPES:
        fail("native_completion_body", f"stop_type {body.get('stop_type')!r} is not one of "
             f"{sorted(STOP_TYPES)}", body=body)
    if body["stop_type"] == "word" and not body.get("stopping_word"):
        fail("native_completion_body", "stop_type word without a stopping_word", body=body)
    if n_predict is not None and body["tokens_predicted"] > n_predict:
        fail("native_completion_body", f"{body['tokens_predicted']} tokens predicted, "
             f"n_predict was {n_predict}", body=body)
    if (n_predict is not None and body["stop_type"] == "limit"
            and body["tokens_predicted"] != n_predict):
        fail("native_completion_body", "stop_type limit before n_predict tokens", body=body)
    check_native_timings(body)


@check("native_stream_sequence", severity=Severity.HIGH,
       description="/completion stream: partials with stop false, one final with stop true, "
       "no [DONE]")
def check_native_stream_sequence(text: str) -> tuple[str, dict[str, Any]]:
    """The streamed text and the final object."""
    events = parse_sse(text).events
    if not events:
        fail("native_stream_sequence", "the stream has no events", text=text[:500])
    payloads: list[dict[str, Any]] = []
    for index, event in enumerate(events):
        if event.data == "[DONE]":
            fail("native_stream_sequence", "llama-server's native stream has no [DONE] event",
                 index=index)
        try:
            payloads.append(json.loads(event.data))
        except ValueError:
            fail("native_stream_sequence", f"event {index} is not JSON", data=event.data)
    *partials, final = payloads
    if final.get("stop") is not True:
        fail("native_stream_sequence", "the last event must have stop: true", last=final)
    predicted = 0
    for index, partial in enumerate(partials):
        if partial.get("stop") is not False or not isinstance(partial.get("content"), str):
            fail("native_stream_sequence", f"event {index} must be a partial (stop: false, "
                 "content string) before the final object", event=partial)
        if not is_int(partial.get("tokens_predicted")) or partial["tokens_predicted"] < predicted:
            fail("native_stream_sequence", "tokens_predicted must not decrease", event=partial)
        predicted = partial["tokens_predicted"]
    streamed = "".join(p["content"] for p in partials) + str(final.get("content") or "")
    return streamed, final


@check("native_n_probs", severity=Severity.MEDIUM,
       description="/completion n_probs: completion_probabilities per generated token, the "
       "n_probs most likely tokens sorted, log probabilities at most 0")
def check_native_n_probs(body: Mapping[str, Any], n_probs: int) -> None:
    probs = body.get("completion_probabilities")
    if not isinstance(probs, list):
        fail("native_n_probs", "n_probs set but completion_probabilities missing", body=body)
    if len(probs) != body.get("tokens_predicted"):
        fail("native_n_probs", "one completion_probabilities entry per predicted token",
             entries=len(probs), tokens_predicted=body.get("tokens_predicted"))
    for index, entry in enumerate(probs):
        top = entry.get("top_logprobs") if isinstance(entry, dict) else None
        if not isinstance(top, list) or len(top) != n_probs:
            fail("native_n_probs", f"entry {index}: top_logprobs must hold n_probs={n_probs} "
                 "tokens", entry=entry)
        values = [t.get("logprob") for t in top]
        if not all(isinstance(v, (int, float)) and v <= 0 for v in values):
            fail("native_n_probs", f"entry {index}: log probabilities must be numbers <= 0",
                 entry=entry)
        if values != sorted(values, reverse=True):
            fail("native_n_probs", f"entry {index}: top_logprobs not sorted, most likely first",
                 entry=entry)
        if not isinstance(entry.get("logprob"), (int, float)) or entry["logprob"] > 0:
            fail("native_n_probs", f"entry {index}: logprob of the sampled token", entry=entry)


@check("llama_props", severity=Severity.MEDIUM,
       description="GET /props: default_generation_settings (object) and total_slots (>= 1)")
def check_llama_props(body: Any) -> None:
    if not isinstance(body, dict):
        fail("llama_props", "/props is not a JSON object", body=body)
    if not isinstance(body.get("default_generation_settings"), dict):
        fail("llama_props", "/props lacks the default_generation_settings object", body=body)
    total = body.get("total_slots")
    if not is_int(total) or total < 1:
        fail("llama_props", f"/props total_slots is {total!r}, not a count >= 1", body=body)


@check("llama_slots", severity=Severity.MEDIUM,
       description="GET /slots: a list of slots, each with an integer id and is_processing")
def check_llama_slots(body: Any) -> None:
    if not isinstance(body, list) or not body:
        fail("llama_slots", "/slots is not a non-empty JSON list", body=body)
    for slot in body:
        if not isinstance(slot, dict) or not is_int(slot.get("id")) \
                or not isinstance(slot.get("is_processing"), bool):
            fail("llama_slots", "a slot lacks its integer id or boolean is_processing",
                 slot=slot)
