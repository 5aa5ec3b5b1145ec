"""Checks of the generation engine's observable behaviour: seeded determinism under batching,
logprobs that describe the sampled token, stop strings that never leak, admission control,
slots freed after a disconnect, exact metrics counters, prompt-cache stats and priority order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.checks.verdict_policy import VerdictClass
from mlxcel_conformance.errors import Severity

CACHE_STATS_FIELDS: dict[str, type | tuple[type, ...]] = {
    "enabled": bool, "apc_enabled": bool, "block_size": int, "hash": str, "entries": int,
    "bytes": int, "capacity_bytes": int, "max_entries": int, "hits": int, "lookups": int,
    "hit_rate": (int, float), "inserts": int, "evictions_lru": int, "evictions_ttl": int,
    "rejections_oversized": int, "total_blocks_stored": int, "unique_block_hashes": int,
    "apc_active_entries": int,
}

METRIC_NAMES = (
    "mlxcel_requests_total", "mlxcel_prompt_tokens_total", "mlxcel_completion_tokens_total",
    "mlxcel_generation_time_seconds_total", "mlxcel_slots_total", "mlxcel_slots_available",
    "mlxcel_queue_depth", "mlxcel_batch_sequences_started",
    "mlxcel_batch_sequences_completed", "mlxcel_batch_prefill_tokens_total",
    "mlxcel_batch_decode_tokens_total", "mlxcel_batch_current_size", "mlxcel_cache_pool_active",
)


@check("seeded_determinism", severity=Severity.HIGH,
       description="Copies of one seeded request that share a batch with other seeds give the "
       "same text: each draws from its own seed")
def check_seeded_determinism(alone: str, batched: Sequence[str]) -> None:
    """The copies in ``batched`` ran in one batch beside requests with other seeds: a sampler
    that drew from a generator they share would give them different draws. ``alone`` (the same
    request on an idle server) is evidence only: MLX computes a lone sequence and a batch row
    with different kernels, and on a real model's quantized weights that can flip a near-tie,
    which the reference documents (docs/chat.md, "Seeds and greedy decoding")."""
    for index, text in enumerate(batched[1:], 1):
        if text != batched[0]:
            fail("seeded_determinism",
                 f"copy {index} of the same seeded request, sharing the batch, produced "
                 "different text", first=batched[0], other=text, alone=alone)


# How far two computations of one prompt's logits may drift (kernels of other shapes, last
# bits) and still be the same computation; a different draw moves logprobs far more.
LOGPROB_DRIFT = 1e-4


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int | None:
    differs = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    return differs if differs is not None or len(a) == len(b) else min(len(a), len(b))


@check("seed_after_cache_hit", severity=Severity.HIGH,
       description="A seeded request after another prompt filled the prompt cache: with "
       "cache_prompt false it is the cold run token for token; with the cache hit it is too, "
       "or differs only where the logprobs so far agree within the last bits")
def check_seed_after_cache_hit(cold: tuple[Sequence[int], Sequence[float]],
                               hit: tuple[Sequence[int], Sequence[float]],
                               uncached: tuple[Sequence[int], Sequence[float]]) -> int | None:
    """Each run is (token ids, their logprobs). The reference's statement (docs/chat.md,
    "Seeds and greedy decoding"): what ran before a seeded request never changes its draws; a
    cold prefill (``cache_prompt: false``) is the same computation bit for bit; a prompt-cache
    hit may compute the last bits differently, and a near-tie may then flip. Returns where the
    cache-hit run left the cold one (None: it did not)."""
    if not cold[0]:
        fail("seed_after_cache_hit", "the seeded request returned no token probabilities")
    bypassed = _first_difference(cold[0], uncached[0])
    if bypassed is not None:
        fail("seed_after_cache_hit", f"with cache_prompt false, after another request, the "
             f"seeded run leaves the cold one at token {bypassed}: something that ran before "
             "it changed its draws", cold=list(cold[0]), uncached=list(uncached[0]))
    differs = _first_difference(cold[0], hit[0])
    upto = len(cold[0]) if differs is None else differs
    drift = max((abs(a - b) for a, b in zip(cold[1][:upto], hit[1][:upto], strict=False)),
                default=0.0)
    if drift > LOGPROB_DRIFT:
        fail("seed_after_cache_hit", f"after a prompt-cache hit the logprobs of the same tokens "
             f"differ by {drift:.2e} (> {LOGPROB_DRIFT:g}): not a last-bits difference of one "
             "computation", drift=drift, first_difference=differs)
    return differs


@check("logprobs_match_sampled_token", severity=Severity.HIGH,
       description="Each logprobs entry is the sampled token: tokens concatenate to the content, "
       "greedy picks the top alternative, and the top list is sorted",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED}))
def check_logprobs_match_sampled_token(
    entries: Sequence[Mapping[str, Any]], content: str, *, greedy: bool
) -> None:
    joined = "".join(str(e.get("token", "")) for e in entries)
    if content and not entries:
        fail("logprobs_match_sampled_token",
             "logprobs were requested but the answer carries no logprobs content",
             ignored=True, ignored_field="logprobs", content=content)
    if joined != content:
        fail("logprobs_match_sampled_token",
             "the logprobs tokens do not spell the generated content",
             tokens=joined, content=content)
    for index, entry in enumerate(entries):
        top = entry.get("top_logprobs") or []
        values = [alt.get("logprob") for alt in top]
        if values != sorted(values, reverse=True):
            fail("logprobs_match_sampled_token", f"entry {index}: top_logprobs not sorted",
                 entry=entry)
        same = [alt for alt in top if alt.get("token") == entry.get("token")]
        if same and abs(float(same[0]["logprob"]) - float(entry["logprob"])) > 1e-3:
            fail("logprobs_match_sampled_token",
                 f"entry {index}: the sampled token's logprob differs from its top_logprobs "
                 "entry", entry=entry)
        if greedy and top and top[0].get("token") != entry.get("token"):
            fail("logprobs_match_sampled_token",
                 f"entry {index}: greedy decoding reported a token that is not the most likely",
                 entry=entry)


# Stop strings accepted and not honoured at all: one defect on Chat (`stop`) and Messages
# (`stop_sequences`), whose adapters share the server's stop handling.
STOP_FIELD = "stop / stop_sequences"


# One defect whichever way a stop string goes wrong where it matches: not applied at all
# (IGNORED, in that case), cut in the wrong place, or left in the text; chat's `stop` and
# Messages' `stop_sequences` alike (a server that misses a stop inside a token misses it both
# ways and on both routes).
STOP_NOT_APPLIED = "stop_string_not_leaked: a matched stop string does not end the text there"


@check("stop_string_not_leaked", severity=Severity.HIGH,
       description="No part of a matched stop string reaches the client",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.IGNORED}))
def check_stop_string_not_leaked(content: str, stop: str, unstopped: str) -> None:
    if stop in content and content == unstopped:
        fail("stop_string_not_leaked", "the stop string did not stop the answer: it is the "
             "answer without the stop string", ignored=True, ignored_field=STOP_FIELD,
             content=content, stop=stop, defect=STOP_NOT_APPLIED)
    if stop in content:
        fail("stop_string_not_leaked", "the stop string appears in the content",
             content=content, stop=stop, defect=STOP_NOT_APPLIED)
    cut = unstopped.find(stop)
    if cut != -1 and content != unstopped[:cut]:
        fail("stop_string_not_leaked",
             "the content is not the unstopped text cut before the stop string",
             content=content, expected=unstopped[:cut], defect=STOP_NOT_APPLIED)


@check("server_busy_503", severity=Severity.HIGH,
       description="A full prefill queue answers 503 server_busy at once, as JSON, "
       "before any SSE header")
def check_server_busy(statuses: Sequence[tuple[int, str, Any]]) -> None:
    busy = [s for s in statuses if s[0] == 503]
    if not busy:
        fail("server_busy_503", "no request was refused although the queue was overfilled",
             statuses=sorted({s[0] for s in statuses}))
    for _status, content_type, body in busy:
        if "json" not in content_type:
            fail("server_busy_503", "the 503 is not a JSON body (SSE headers sent first?)",
                 content_type=content_type)
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict) or error.get("type") != "server_busy":
            fail("server_busy_503", "the 503 body is not an error of type server_busy",
                 body=body)


@check("anthropic_overloaded_529", severity=Severity.HIGH,
       description="On /v1/messages a full prefill queue answers 529 overloaded_error in "
       "Anthropic's error shape, as JSON, before any SSE header")
def check_anthropic_overloaded(status: int, content_type: str, body: Any) -> None:
    if status != 529:
        fail("anthropic_overloaded_529", f"HTTP {status} instead of 529 while the queue is full",
             body=body)
    if "json" not in content_type:
        fail("anthropic_overloaded_529", "the 529 is not a JSON body (SSE headers sent first?)",
             content_type=content_type)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(body, dict) or body.get("type") != "error" or not isinstance(error, dict) \
            or error.get("type") != "overloaded_error" or not isinstance(error.get("message"), str):
        fail("anthropic_overloaded_529", "the body is not Anthropic's "
             '{"type": "error", "error": {"type": "overloaded_error", "message"}}', body=body)


@check("slots_freed_after_disconnect", severity=Severity.HIGH,
       description="Every slot is idle again soon after its clients disconnected")
def check_slots_idle(slots: Sequence[Mapping[str, Any]], waited_s: float, limit_s: float) -> None:
    busy = [s for s in slots if s.get("state") != "idle"]
    if busy:
        fail("slots_freed_after_disconnect",
             f"{len(busy)} slot(s) still busy {waited_s:.1f} s after their clients left "
             f"(limit {limit_s:.1f} s)", slots=list(slots))


def parse_metrics(text: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.partition(" ")
            values[name] = float(value)
    return values


@check("metrics_names", severity=Severity.MEDIUM,
       description="/metrics exposes exactly the reference's mlxcel_* metric names and types")
def check_metrics_names(text: str) -> dict[str, float]:
    values = parse_metrics(text)
    missing = [n for n in METRIC_NAMES if n not in values]
    if missing:
        fail("metrics_names", "metrics missing from /metrics", missing=missing)
    for name in METRIC_NAMES:
        if f"# TYPE {name} " not in text:
            fail("metrics_names", f"{name} has no TYPE line under its own name", metric=name)
    return values


@check("metrics_counters_exact", severity=Severity.HIGH,
       description="After a known sequence of requests the counters moved by exactly that much")
def check_metrics_delta(
    before: Mapping[str, float], after: Mapping[str, float], expected: Mapping[str, float]
) -> None:
    for name, delta in expected.items():
        moved = after.get(name, 0.0) - before.get(name, 0.0)
        if abs(moved - delta) > 1e-9:
            fail("metrics_counters_exact", f"{name} moved by {moved:g}, expected {delta:g}",
                 metric=name, before=before.get(name), after=after.get(name), expected=delta)


@check("cache_stats_fields", severity=Severity.MEDIUM,
       description="/v1/cache/stats has every reference field with its type")
def check_cache_stats(body: Any) -> None:
    if not isinstance(body, dict):
        fail("cache_stats_fields", "the cache stats body is not an object", body=body)
    for name, kind in CACHE_STATS_FIELDS.items():
        value = body.get(name)
        wrong_bool = isinstance(value, bool) and kind is not bool
        if name not in body or not isinstance(value, kind) or wrong_bool:
            fail("cache_stats_fields", f"field {name!r} missing or not {kind}", body=body)
    lookups, hits = body["lookups"], body["hits"]
    rate = hits / lookups if lookups else 0.0
    if hits > lookups or abs(body["hit_rate"] - rate) > 1e-6:
        fail("cache_stats_fields", "hit_rate is not hits / lookups", body=body)


@check("priority_order", severity=Severity.MEDIUM,
       description="With every slot busy, an X-Priority: high request takes the next free slot "
       "before an earlier low one (as /slots shows)")
def check_priority_order(admitted: Sequence[str], slots: Sequence[Mapping[str, Any]]) -> None:
    """``admitted``: which of the two queued requests ("high", "low") hold a slot in the
    ``/slots`` body ``slots``, read after one slot was freed while both waited."""
    if not admitted:
        fail("priority_order", "neither queued request took the slot that was freed",
             slots=list(slots))
    if "high" not in admitted:
        fail("priority_order", "the low-priority request took the freed slot while the "
             "high-priority one still waited", admitted=list(admitted), slots=list(slots))


@check("loop_detection", severity=Severity.MEDIUM,
       description="A repeating tail ends generation early with finish_reason stop")
def check_loop_stopped(completion_tokens: int, max_tokens: int, finish_reason: str) -> None:
    if completion_tokens >= max_tokens or finish_reason != "stop":
        fail("loop_detection", "a repeating loop ran to max_tokens despite loop detection",
             completion_tokens=completion_tokens, finish_reason=finish_reason)
