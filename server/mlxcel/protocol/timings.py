"""llama-server's ``timings`` object and the speculative-decoding counters on it.

On the OpenAI routes (chat and completions) a top-level ``timings`` appears when a drafter ran
at least one verify round for the request, or when the request sent llama-server's
``timings_per_token: true``: on the non-streaming body and on the streaming chunk that carries
``finish_reason``; with ``timings_per_token`` every streamed chunk with tokens carries the
timings so far too (``TimingsClock``). The native ``/completion`` always has ``timings`` and
gains the four draft fields under the same condition.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..generation import DraftStats, EngineEvent, Finished, TokenDelta


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


def request_timings(finished: Sequence[Finished] | Finished, always: bool
                    ) -> dict[str, Any] | None:
    """The ``timings`` of one generation (or the sum over several), with the draft counters
    when a drafter ran; None when none ran and ``always`` is false."""
    items = [finished] if isinstance(finished, Finished) else list(finished)
    drafts = [f.draft for f in items if f.draft is not None and f.draft.rounds > 0]
    if not drafts and not always:
        return None
    body = llama_timings(
        sum(f.prompt_tokens - f.cached_tokens for f in items), sum(f.prompt_ms for f in items),
        sum(f.completion_tokens for f in items), sum(f.predicted_ms for f in items),
        cache_n=sum(f.cached_tokens for f in items))
    if not drafts:
        return body
    total = DraftStats(drafts[0].kind, sum(d.drafted for d in drafts),
                       sum(d.accepted for d in drafts), sum(d.rounds for d in drafts))
    return {**body, **draft_fields(total)}


@dataclass
class TimingsClock:
    """One streamed generation's timings so far, measured at the adapter: prompt time from
    submission to the first token, predicted time from there to now."""

    prompt_n: int
    started: float = field(default_factory=time.perf_counter)
    first_at: float | None = None
    predicted_n: int = 0

    def feed(self, event: EngineEvent) -> None:
        if isinstance(event, TokenDelta) and event.token_ids:
            if self.first_at is None:
                self.first_at = time.perf_counter()
            self.predicted_n += len(event.token_ids)

    def so_far(self) -> dict[str, Any]:
        now = time.perf_counter()
        first = self.first_at or now
        return llama_timings(self.prompt_n, (first - self.started) * 1e3, self.predicted_n,
                             (now - first) * 1e3)
