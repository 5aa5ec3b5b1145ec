"""Contract checks for llama-server's documented features, each citing the section of
llama-server's README (``tools/server/README.md`` in ggml-org/llama.cpp) it reads. They require
what the README documents and llama-server itself sends, and nothing the reference adds (a
check here never fails llama-server on a field only mlxcel has).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlxcel_conformance.checks.llama_native import TIMING_FIELDS
from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

PROGRESS_FIELDS = ("total", "cache", "processed", "time_ms")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@check("native_error_body", severity=Severity.MEDIUM,
       description='README "API errors": {"error": {"code": <HTTP status>, "message", "type"}}')
def check_native_error_body(body: Any, status: int) -> dict[str, Any]:
    """The ``error`` object of a native route's error response."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        fail("native_error_body", 'the body must be {"error": {...}}', body=body)
    if error.get("code") != status:
        fail("native_error_body", f"error.code must be the HTTP status ({status}) as an "
             "integer", body=body)
    if not isinstance(error.get("message"), str) or not error["message"]:
        fail("native_error_body", "error.message must be a non-empty string", body=body)
    if not isinstance(error.get("type"), str) or not error["type"]:
        fail("native_error_body", "error.type must be a non-empty string", body=body)
    return error


@check("native_context_exceeded", severity=Severity.MEDIUM,
       description='README "API errors": a prompt over the context is a 400 in the error shape; '
       "n_prompt_tokens and n_ctx, when sent, are the prompt length and the context")
def check_native_context_exceeded(status: int, body: Any, n_prompt: int, n_ctx: int) -> None:
    if status != 400:
        fail("native_context_exceeded", f"a prompt of {n_prompt} tokens with a {n_ctx}-token "
             f"context must answer 400, not {status}", body=body)
    error = check_native_error_body(body, 400)
    sent = {k: error[k] for k in ("n_prompt_tokens", "n_ctx") if k in error}
    if "n_prompt_tokens" in sent and sent["n_prompt_tokens"] < n_ctx:
        fail("native_context_exceeded", "n_prompt_tokens is below n_ctx", error=error)
    if "n_ctx" in sent and sent["n_ctx"] != n_ctx:
        fail("native_context_exceeded", "n_ctx differs from /props' per-slot context",
             error=error, props_n_ctx=n_ctx)


@check("native_prompt_progress", severity=Severity.MEDIUM,
       description='README "POST /completion", return_progress: stream partials carry '
       "prompt_progress {total, cache, processed, time_ms} before the first token")
def check_native_prompt_progress(partials: Sequence[Mapping[str, Any]], prompt_tokens: int) -> None:
    progress = [p["prompt_progress"] for p in partials if "prompt_progress" in p]
    if not progress:
        fail("native_prompt_progress", "return_progress set but no partial carried "
             "prompt_progress", partials=partials[:3])
    first_token = next((i for i, p in enumerate(partials) if p.get("content")), len(partials))
    if "prompt_progress" not in partials[0] and first_token == 0:
        fail("native_prompt_progress", "prompt_progress must come before the first token",
             partials=partials[:3])
    for item in progress:
        if not all(_number(item.get(k)) and item[k] >= 0 for k in PROGRESS_FIELDS):
            fail("native_prompt_progress", f"prompt_progress needs {PROGRESS_FIELDS} as "
                 "non-negative numbers", progress=item)
        if item["total"] != prompt_tokens or not item["cache"] <= item["processed"] <= \
                item["total"]:
            fail("native_prompt_progress", "cache <= processed <= total, total = the prompt's "
                 "tokens", progress=item, prompt_tokens=prompt_tokens)


@check("native_post_sampling_probs", severity=Severity.MEDIUM,
       description='README "POST /completion", post_sampling_probs: `prob` (0..1) instead of '
       "`logprob`, `top_probs` instead of `top_logprobs`, at most n_probs of them")
def check_native_post_sampling_probs(body: Mapping[str, Any], n_probs: int) -> None:
    probs = body.get("completion_probabilities")
    if not isinstance(probs, list) or not probs:
        fail("native_post_sampling_probs", "n_probs with post_sampling_probs must answer "
             "completion_probabilities", body=body)
    for entry in probs:
        top = entry.get("top_probs") if isinstance(entry, dict) else None
        if not isinstance(entry, dict) or "logprob" in entry or "top_logprobs" in entry \
                or not isinstance(top, list):
            fail("native_post_sampling_probs", "each entry carries prob and top_probs, not "
                 "logprob and top_logprobs", entry=entry)
        if len(top) > n_probs:
            fail("native_post_sampling_probs", f"top_probs holds at most n_probs ({n_probs}) "
                 "entries", entry=entry)
        for item in [entry, *top]:
            prob: Any = item.get("prob") if isinstance(item, dict) else None
            if not _number(prob) or not 0.0 <= prob <= 1.0 or not is_int(item.get("id")) \
                    or not isinstance(item.get("token"), str):
                fail("native_post_sampling_probs", "id (integer), token (string) and prob "
                     "(between 0 and 1) on every entry", entry=item)


@check("native_timings_per_token", severity=Severity.LOW,
       description='README "POST /completion", timings_per_token: every streamed token '
       "carries the timings so far")
def check_native_timings_per_token(partials: Sequence[Mapping[str, Any]]) -> None:
    with_tokens = [p for p in partials if p.get("content")]
    if not with_tokens:
        fail("native_timings_per_token", "the stream generated no token", partials=partials)
    for partial in with_tokens:
        timings = partial.get("timings")
        if not isinstance(timings, dict) or not all(_number(timings.get(k)) and timings[k] >= 0
                                                    for k in TIMING_FIELDS):
            fail("native_timings_per_token", f"a partial lacks timings with {TIMING_FIELDS}",
                 partial=partial)


@check("native_props_shape", severity=Severity.MEDIUM,
       description='README "GET /props": default_generation_settings (params, n_ctx), '
       "total_slots, model_path, chat_template, modalities, build_info")
def check_native_props_shape(body: Any) -> None:
    if not isinstance(body, dict):
        fail("native_props_shape", "/props must be a JSON object", body=body)
    settings = body.get("default_generation_settings")
    if not isinstance(settings, dict) or not isinstance(settings.get("params"), dict) \
            or not is_int(settings.get("n_ctx")):
        fail("native_props_shape", "default_generation_settings needs params (an object) and "
             "n_ctx (an integer)", settings=settings)
    params = settings["params"]
    missing = [k for k in ("n_predict", "seed", "temperature", "top_k", "top_p", "min_p")
               if k not in params]
    if missing:
        fail("native_props_shape", f"params lacks {missing}", params=params)
    for key, kind in (("total_slots", int), ("model_path", str), ("chat_template", str),
                      ("build_info", str), ("modalities", dict)):
        if not isinstance(body.get(key), kind) or isinstance(body.get(key), bool):
            fail("native_props_shape", f"{key} must be a {kind.__name__}", body=body)
    if body["total_slots"] < 1 or not isinstance(body["modalities"].get("vision"), bool):
        fail("native_props_shape", "total_slots >= 1 and modalities.vision a boolean",
             body=body)


@check("native_slots_shape", severity=Severity.MEDIUM,
       description='README "GET /slots": one entry per slot with id, n_ctx, speculative, '
       "is_processing (params an object and next_token an object, or a list of them as "
       "llama-server sends it, when present)")
def check_native_slots_shape(body: Any, total_slots: int) -> None:
    if not isinstance(body, list):
        fail("native_slots_shape", "/slots must be a JSON array", body=body)
    ids = [s.get("id") for s in body if isinstance(s, dict)]
    if sorted(i for i in ids if is_int(i))[:total_slots] != list(range(total_slots)):
        fail("native_slots_shape", f"the slots must be numbered 0..{total_slots - 1}",
             ids=ids)
    for slot in body[:total_slots]:
        if not is_int(slot.get("n_ctx")) or not isinstance(slot.get("is_processing"), bool) \
                or not isinstance(slot.get("speculative"), bool):
            fail("native_slots_shape", "a slot needs n_ctx, is_processing and speculative",
                 slot=slot)
        if "params" in slot and not isinstance(slot["params"], dict):
            fail("native_slots_shape", "params must be an object", slot=slot)
        following = slot.get("next_token", {})
        items = following if isinstance(following, list) else [following]
        if not all(isinstance(item, dict) for item in items):
            fail("native_slots_shape", "next_token must be an object (or a list of them)",
                 slot=slot)
