"""Checks for speculative decoding (the reference's "Speculative decoding timings"): greedy
output with a drafter equals greedy output without one, and the ``timings`` object with its
draft counters appears exactly where it should (the non-streaming body and the streaming
chunk carrying ``finish_reason``; never on other chunks; never when no drafter ran).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

DRAFT_FIELDS = ("draft_n", "draft_n_accepted", "draft_rounds", "draft_kind")
LLAMA_FIELDS = ("prompt_n", "prompt_ms", "prompt_per_token_ms", "prompt_per_second",
                "predicted_n", "predicted_ms", "predicted_per_token_ms", "predicted_per_second")


def has_draft_timings(body: Any) -> bool:
    """Whether ``body`` (a response or a chunk) carries the draft counters."""
    timings = body.get("timings") if isinstance(body, Mapping) else None
    return isinstance(timings, Mapping) and "draft_rounds" in timings


@check("draft_timings_fields", severity=Severity.MEDIUM,
       description="`timings` after a verify round has llama-server's fields plus draft_n, "
       "draft_n_accepted (<= draft_n), draft_rounds (>= 1) and a draft_kind string")
def check_draft_timings(timings: Any, completion_tokens: int | None = None) -> None:
    name = "draft_timings_fields"
    if not isinstance(timings, Mapping):
        fail(name, "no timings object", timings=timings)
    missing = [f for f in (*LLAMA_FIELDS, *DRAFT_FIELDS) if f not in timings]
    if missing:
        fail(name, f"timings lacks {missing}", timings=dict(timings))
    counts = {f: timings[f] for f in ("draft_n", "draft_n_accepted", "draft_rounds")}
    if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
               for v in counts.values()):
        fail(name, "draft counters must be non-negative integers", **counts)
    if counts["draft_rounds"] < 1 or counts["draft_n_accepted"] > counts["draft_n"]:
        fail(name, "need draft_rounds >= 1 and draft_n_accepted <= draft_n", **counts)
    if not isinstance(timings["draft_kind"], str) or not timings["draft_kind"]:
        fail(name, "draft_kind must be a non-empty string", draft_kind=timings["draft_kind"])
    if completion_tokens is not None and timings["predicted_n"] != completion_tokens:
        fail(name, "timings.predicted_n differs from usage.completion_tokens",
             predicted_n=timings["predicted_n"], completion_tokens=completion_tokens)


@check("draft_timings_finish_chunk_only", severity=Severity.MEDIUM,
       description="in a speculative stream only the chunk carrying finish_reason has timings")
def check_timings_on_finish_chunk_only(chunks: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    name = "draft_timings_finish_chunk_only"
    carrying = [i for i, c in enumerate(chunks) if "timings" in c]
    finishing = [i for i, c in enumerate(chunks)
                 if any(ch.get("finish_reason") for ch in c.get("choices") or [])]
    if len(carrying) != 1:
        fail(name, f"{len(carrying)} chunks carry timings, expected exactly one",
             chunk_indexes=carrying)
    if carrying != finishing[-1:]:
        fail(name, "timings is not on the chunk carrying finish_reason",
             timings_chunk=carrying, finish_chunks=finishing)
    timings: Mapping[str, Any] = chunks[carrying[0]]["timings"]
    return timings


@check("draft_timings_absent_without_drafter", severity=Severity.MEDIUM,
       description="no draft counters when no drafter ran (draft_model: null, or a request "
       "that ended inside prefill)")
def check_no_draft_timings(bodies: Sequence[Any], why: str) -> None:
    for index, body in enumerate(bodies):
        if has_draft_timings(body):
            fail("draft_timings_absent_without_drafter",
                 f"draft counters present although {why}", index=index,
                 timings=body.get("timings"))


@check("speculative_greedy_exact", severity=Severity.HIGH,
       description="greedy output with speculative decoding equals greedy output without it")
def check_speculative_exact(plain: str, speculative: str, plain_tokens: int,
                            speculative_tokens: int) -> None:
    if plain != speculative or plain_tokens != speculative_tokens:
        fail("speculative_greedy_exact", "speculative greedy output differs from plain",
             plain=plain, speculative=speculative, plain_tokens=plain_tokens,
             speculative_tokens=speculative_tokens)


@check("draft_model_confined", severity=Severity.HIGH,
       description="a per-request `draft_model` naming an arbitrary path or hub id is refused "
       "(400, or 501 without a configured draft model), never loaded")
def check_draft_model_refused(status: int, value: str, body: Any) -> None:
    if status not in (400, 501):
        fail("draft_model_confined", f"HTTP {status} for draft_model={value!r}: a request "
             "must not make the server load a model", body=body)
