"""The events the engine answers a ``GenerationRequest`` with: ``TokenDelta`` pieces of text
ended by one ``Finished``. Family-neutral, like the request."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

FinishReason = Literal["stop", "length", "error", "cancelled"]


@dataclass(frozen=True)
class TopLogprob:
    token: str
    logprob: float
    bytes: tuple[int, ...]
    token_id: int = -1


@dataclass(frozen=True)
class TokenLogprob:
    """The sampled token with its log probability and the most likely alternatives (from the
    engine, a ``TopAlternatives``: arrays until a route renders them)."""

    token_id: int
    token: str
    logprob: float
    bytes: tuple[int, ...]
    top: Sequence[TopLogprob] = ()


@dataclass(frozen=True)
class TokenDelta:
    """New text released to the client (already held back for stop strings and UTF-8)."""

    text: str
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[TokenLogprob, ...] = ()


@dataclass(frozen=True)
class DraftStats:
    """What a speculative drafter did for one request: tokens it proposed, how many of them
    the model accepted, and how many verify rounds ran (a round with at least one draft)."""

    kind: str  # "draft-model" or "prompt-lookup"
    drafted: int = 0
    accepted: int = 0
    rounds: int = 0


@dataclass(frozen=True)
class Finished:
    """The last event of every request."""

    reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    error: str | None = None
    stop_string: str | None = None
    # Prompt tokens served from the prompt cache: accounting, not part of the outcome.
    cached_tokens: int = field(default=0, compare=False)
    # Set when a drafter ran at least one verify round for this request.
    draft: DraftStats | None = field(default=None, compare=False)
    # Engine-measured: slot start to the first token (prefill), first token to the end.
    prompt_ms: float = field(default=0.0, compare=False)
    predicted_ms: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class PromptProgress:
    """How far the prompt has been read, sent only to a request that asked for it
    (``report_progress``): ``processed`` of its ``total`` tokens are in the cache, ``cached`` of
    them taken from the prompt cache. Sent once before the first chunk, after each prefill
    chunk, and at the latest with the first token; never part of ``EngineEvent``."""

    total: int
    cached: int
    processed: int


EngineEvent = TokenDelta | Finished
