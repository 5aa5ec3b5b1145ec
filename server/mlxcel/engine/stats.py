"""Counters the engine keeps for /health, /slots and /metrics.

Written only by the engine thread; readers on the event loop see plain ints (a torn read of a
counter that is being incremented is harmless for monitoring).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..generation import Finished, GenerationRequest


@dataclass
class EngineStats:
    """Cumulative batch counters reported by /health (``observability``)."""

    sequences_started: int = 0
    sequences_completed: int = 0
    total_prefill_tokens: int = 0
    total_decode_tokens: int = 0
    decode_steps_processed: int = 0
    prefill_chunks_processed: int = 0
    active_sequences: int = 0


@dataclass
class RequestMetrics:
    """Per-request totals behind ``mlxcel_requests_total`` and its siblings.

    A request counts when its generation finishes normally (stop or length); a request the
    client cancelled, one that failed, and one submitted with ``count_in_metrics=False``
    (streaming /v1/completions) are not counted.
    """

    requests_total: int = 0
    prompt_tokens_total: int = 0
    completion_tokens_total: int = 0
    generation_time_seconds_total: float = 0.0

    def record(self, request: GenerationRequest, finished: Finished, seconds: float) -> None:
        if not request.count_in_metrics or finished.reason not in ("stop", "length"):
            return
        self.requests_total += 1
        self.prompt_tokens_total += finished.prompt_tokens
        self.completion_tokens_total += finished.completion_tokens
        self.generation_time_seconds_total += seconds
