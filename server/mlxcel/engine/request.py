"""The family-neutral request every API adapter translates into, and the events it yields back.

Adapters (``protocol/<family>.py``) build a ``GenerationRequest`` from token ids and sampling
settings; the engine answers with a stream of ``TokenDelta`` events ended by one ``Finished``.
Nothing here knows HTTP or any API family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

FinishReason = Literal["stop", "length", "error", "cancelled"]

# mlx-lm's logits-processor signature: (generated token ids so far, logits) -> logits.
LogitsProcessor = Callable[[Any, Any], Any]
# Made fresh for each generation, so a stateful processor (a grammar matcher) starts clean.
LogitsProcessorFactory = Callable[[], LogitsProcessor]


@dataclass(frozen=True)
class SamplingParams:
    """Per-request sampling settings; ``None`` fields take the server defaults."""

    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    seed: int | None = None
    repetition_penalty: float | None = None
    repetition_context_size: int = 20
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    logit_bias: dict[int, float] | None = None


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: prompt token ids, limits, stops and sampling."""

    prompt_tokens: tuple[int, ...]
    max_tokens: int
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    ignore_eos: bool = False
    logits_processor_factories: tuple[LogitsProcessorFactory, ...] = ()
    request_id: str = ""


@dataclass(frozen=True)
class TopLogprob:
    token: str
    logprob: float
    bytes: tuple[int, ...]


@dataclass(frozen=True)
class TokenLogprob:
    """The sampled token with its log probability and the most likely alternatives."""

    token_id: int
    token: str
    logprob: float
    bytes: tuple[int, ...]
    top: tuple[TopLogprob, ...] = ()


@dataclass(frozen=True)
class TokenDelta:
    """New text released to the client (already held back for stop strings and UTF-8)."""

    text: str
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[TokenLogprob, ...] = ()


@dataclass(frozen=True)
class Finished:
    """The last event of every request."""

    reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None
    stop_string: str | None = None


EngineEvent = TokenDelta | Finished
