"""llama-server's ``timings`` object and the speculative-decoding counters on it.

On the OpenAI routes (chat and completions) a top-level ``timings`` appears only when a drafter
ran at least one verify round for the request: on the non-streaming body and on the streaming
chunk that carries ``finish_reason``, never on other chunks. The native ``/completion`` always
has ``timings`` and gains the four draft fields under the same condition.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..generation import DraftStats, Finished


def llama_timings(prompt_n: int, prompt_ms: float, predicted_n: int, predicted_ms: float,
                  cache_n: int = 0) -> dict[str, Any]:
    """llama-server's fields: counts, milliseconds, per-token milliseconds and tokens/s."""
    return {
        "cache_n": cache_n,
        "prompt_n": prompt_n,
        "prompt_ms": prompt_ms,
        "prompt_per_token_ms": prompt_ms / prompt_n if prompt_n else 0.0,
        "prompt_per_second": prompt_n / prompt_ms * 1e3 if prompt_ms > 0 else 0.0,
        "predicted_n": predicted_n,
        "predicted_ms": predicted_ms,
        "predicted_per_token_ms": predicted_ms / predicted_n if predicted_n else 0.0,
        "predicted_per_second": (
            predicted_n / predicted_ms * 1e3 if predicted_ms > 0 and predicted_n else 0.0
        ),
    }


def draft_fields(draft: DraftStats) -> dict[str, Any]:
    return {
        "draft_n": draft.drafted,
        "draft_n_accepted": draft.accepted,
        "draft_rounds": draft.rounds,
        "draft_kind": draft.kind,
    }


def speculative_timings(finished: Sequence[Finished] | Finished) -> dict[str, Any] | None:
    """The ``timings`` of one generation (or the sum over a multi-prompt completion), or None
    when no drafter ran a verify round for any of them."""
    items = [finished] if isinstance(finished, Finished) else list(finished)
    drafts = [f.draft for f in items if f.draft is not None and f.draft.rounds > 0]
    if not drafts:
        return None
    body = llama_timings(
        sum(f.prompt_tokens - f.cached_tokens for f in items), sum(f.prompt_ms for f in items),
        sum(f.completion_tokens for f in items), sum(f.predicted_ms for f in items),
        cache_n=sum(f.cached_tokens for f in items))
    total = DraftStats(drafts[0].kind, sum(d.drafted for d in drafts),
                       sum(d.accepted for d in drafts), sum(d.rounds for d in drafts))
    return {**body, **draft_fields(total)}
