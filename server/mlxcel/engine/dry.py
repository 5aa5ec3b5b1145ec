"""DRY ("don't repeat yourself"): the one implementation every route uses.

A token that would extend a run already seen in the context is penalised by
``multiplier * base ** (length - allowed_length)``, where ``length`` is how many tokens at the
end of the context repeat the ones before an earlier occurrence of that token (overlapping
runs count, so ``a a a a`` is a repeat of length 3 for ``a``). Matching is bounded by the most
recent sequence breaker: nothing before the last breaker in the context takes part, so the
tail after a newline starts afresh. The token that followed the earlier run is penalised
whatever it is (a breaker too). These are llama.cpp's DRY semantics; the code is our own.

Breakers arrive in two forms and end up as one table of token sequences:
- token ids (``dry_sequence_breakers`` on the OpenAI routes, as the reference specifies);
- strings (llama-server's ``/completion``, default ``["\\n", ":", "\\"", "*"]``): every token
  whose text contains the string breaks alone, and a token whose text ends with the start of
  the string breaks when the tokens of the rest of the string follow it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import mlx.core as mx
import numpy as np

from ..generation import SamplingParams

# A breaker: its head token id, then the token ids that must follow it (often none).
BreakerSequence = tuple[int, ...]
DEFAULT_STRING_BREAKERS: tuple[str, ...] = ("\n", ":", '"', "*")
# The log of float32's maximum: larger exponents would overflow (llama.cpp's clamp).
FLOAT32_MAX_LOG = 88.7228391
# Penalties saturate here: past this the token is banned anyway, and -inf everywhere is NaN.
MAX_PENALTY = 1e30


@dataclass(frozen=True)
class DryConfig:
    """One request's DRY settings, already resolved from whichever API family sent them."""

    multiplier: float
    base: float = 1.75
    allowed_length: int = 2
    window: int = 0  # tokens of context scanned; 0 = the whole context
    breakers: tuple[BreakerSequence, ...] = ()

    @property
    def enabled(self) -> bool:
        return self.multiplier > 0.0 and self.base >= 1.0


def dry_config(params: SamplingParams) -> DryConfig:
    return DryConfig(
        multiplier=params.dry_multiplier,
        base=params.dry_base,
        allowed_length=params.dry_allowed_length,
        window=params.dry_penalty_last_n,
        breakers=params.dry_sequence_breakers,
    )


def breakers_from_strings(
    strings: Iterable[str], pieces: Sequence[tuple[int, str]],
    encode: Callable[[str], list[int]],
) -> tuple[BreakerSequence, ...]:
    """Token sequences for string breakers; ``pieces`` pairs each token id with its text."""
    found: set[BreakerSequence] = set()
    for text in strings:
        if not text:
            continue
        for token_id, piece in pieces:
            if text in piece:
                found.add((token_id,))
                continue
            # the piece ends with the first ``k`` characters of the breaker
            for k in range(1, len(text)):
                if piece.endswith(text[:k]):
                    rest = encode(text[k:])
                    if rest:
                        found.add((token_id, *rest))
    return tuple(sorted(found))


# Elements compared at once when extending matches (candidates x tokens): bounds the memory of
# one step whatever the context, e.g. a 32k-token run of one repeated token.
MATCH_BLOCK = 1 << 20


def _repeat_limit(window: np.ndarray, breakers: Sequence[BreakerSequence]) -> int:
    """Tokens after the most recent breaker (the whole window when there is none). Only the
    positions holding a breaker's head token are visited, newest first."""
    last = len(window) - 1
    tails: dict[int, list[tuple[int, ...]]] = {}
    for head, *tail in breakers:
        tails.setdefault(head, []).append(tuple(tail))
    if not tails:
        return len(window)
    heads = np.flatnonzero(np.isin(window, np.fromiter(tails, dtype=np.int64)))
    for position in heads[::-1].tolist():
        back = last - position
        longest = -1
        for follow in tails[int(window[position])]:
            n = len(follow)
            if longest < n <= back and window[position + 1:position + 1 + n].tolist() == \
                    list(follow):
                longest = n
        if longest >= 0:
            return back - longest
    return len(window)


def _match_lengths(tokens: np.ndarray, positions: np.ndarray, limit: int) -> np.ndarray:
    """For each position ``j``, how many tokens ending at ``j`` equal those ending at the last
    position (the common suffix), capped at ``limit``. The candidates still matching are
    extended by blocks that double in length, so a long repeat costs a few array operations
    rather than one per token."""
    last = len(tokens) - 1
    lengths = np.zeros(positions.shape, dtype=np.int64)
    alive = np.arange(positions.size)
    matched, block = 0, 1
    while alive.size and matched < limit:
        k = max(1, min(block, limit - matched, MATCH_BLOCK // alive.size))
        offsets = matched + np.arange(k)
        index = positions[alive][:, None] - offsets[None, :]
        equal = (index >= 0) & (tokens[np.maximum(index, 0)] == tokens[last - offsets][None, :])
        whole = equal.all(axis=1)
        lengths[alive] = matched + np.where(whole, k, np.argmin(equal, axis=1))
        alive = alive[whole]
        matched += k
        block *= 2
    return lengths


def repeat_lengths(window: Sequence[int] | np.ndarray, config: DryConfig) -> dict[int, int]:
    """For each token that would continue a repeat of the context's tail, the length of the
    longest such repeat (only lengths ``>= allowed_length``)."""
    tokens = np.asarray(window, dtype=np.int64).reshape(-1)
    n = len(tokens)
    if n < 2:
        return {}
    limit = _repeat_limit(tokens, config.breakers)
    if limit < config.allowed_length:
        return {}
    last = n - 1
    # candidates: positions j < last whose token equals the last one, overlapping allowed
    positions = np.flatnonzero(tokens[:last] == tokens[last])
    lengths = _match_lengths(tokens, positions, limit)
    found: dict[int, int] = {}
    if config.allowed_length <= 0:  # every follower in the window counts, even unrepeated
        found = dict.fromkeys(tokens[1:].tolist(), 0)
    keep = lengths >= config.allowed_length
    for follower, run in zip(tokens[positions[keep] + 1].tolist(), lengths[keep].tolist(),
                             strict=True):
        if run > found.get(follower, -1):
            found[follower] = run
    return found


def penalty(length: int, config: DryConfig) -> float:
    exponent = length - config.allowed_length
    if config.base > 1.000001:
        exponent = min(exponent, int(FLOAT32_MAX_LOG / math.log(config.base)))
    return min(config.multiplier * config.base**exponent, MAX_PENALTY)


def dry_penalties(history: Sequence[int] | np.ndarray, config: DryConfig) -> dict[int, float]:
    """Penalty per candidate token given the context so far (oldest first)."""
    if not config.enabled:
        return {}
    window = history[-config.window :] if config.window > 0 else history
    return {token: penalty(n, config) for token, n in repeat_lengths(window, config).items()}


class DryPenalty:
    """mlx-lm logits processor: ``(tokens so far, logits (1, vocab)) -> logits``."""

    def __init__(self, config: DryConfig) -> None:
        self.config = config

    def __call__(self, tokens: mx.array, logits: mx.array) -> mx.array:
        # The context stays an array: no Python list of the whole history per step.
        found = dry_penalties(np.asarray(tokens).reshape(-1), self.config)
        if not found:
            return logits
        ids = mx.array(list(found), dtype=mx.int32)
        amounts = mx.array(list(found.values()), dtype=logits.dtype)
        logits[..., ids] = logits[..., ids] - amounts
        return logits
