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
from collections.abc import Callable, Iterable, Mapping, Sequence
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


def _repeat_limit(window: Sequence[int], tails: Mapping[int, list[tuple[int, ...]]]) -> int:
    """Tokens after the most recent breaker (the whole window when there is none)."""
    last = len(window) - 1
    for back in range(len(window)):
        options = tails.get(window[last - back])
        if options is None:
            continue
        longest = -1
        for tail in options:
            n = len(tail)
            if longest < n <= back and all(
                tail[k] == window[last - back + k + 1] for k in range(n)
            ):
                longest = n
        if longest >= 0:
            return back - longest
    return len(window)


def repeat_lengths(window: Sequence[int], config: DryConfig) -> dict[int, int]:
    """For each token that would continue a repeat of the context's tail, the length of the
    longest such repeat (only lengths ``>= allowed_length``)."""
    n = len(window)
    if n < 2:
        return {}
    tails: dict[int, list[tuple[int, ...]]] = {}
    for head, *tail in config.breakers:
        tails.setdefault(head, []).append(tuple(tail))
    limit = _repeat_limit(window, tails)
    if limit < config.allowed_length:
        return {}
    tokens = np.asarray(window, dtype=np.int64)
    last = n - 1
    # candidates: positions j < last whose token equals the last one; extend their match
    # backwards in lock step with the tail, overlapping allowed, capped at ``limit``.
    positions = np.flatnonzero(tokens[:last] == tokens[last])
    lengths = np.zeros(positions.shape, dtype=np.int64)
    alive = positions
    length = 0
    while alive.size and length < limit:
        length += 1
        lengths[np.searchsorted(positions, alive)] = length
        if length >= limit:
            break
        alive = alive[alive - length >= 0]
        alive = alive[tokens[alive - length] == tokens[last - length]]
    found: dict[int, int] = {}
    if config.allowed_length <= 0:  # every follower in the window counts, even unrepeated
        found = dict.fromkeys(tokens[1:].tolist(), 0)
    for position, run in zip(positions.tolist(), lengths.tolist(), strict=True):
        if run >= config.allowed_length:
            follower = int(tokens[position + 1])
            if run > found.get(follower, -1):
                found[follower] = run
    return found


def penalty(length: int, config: DryConfig) -> float:
    exponent = length - config.allowed_length
    if config.base > 1.000001:
        exponent = min(exponent, int(FLOAT32_MAX_LOG / math.log(config.base)))
    return min(config.multiplier * config.base**exponent, MAX_PENALTY)


def dry_penalties(history: Sequence[int], config: DryConfig) -> dict[int, float]:
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
        history: list[int] = np.asarray(tokens).reshape(-1).tolist()
        found = dry_penalties(history, self.config)
        if not found:
            return logits
        ids = mx.array(list(found), dtype=mx.int32)
        amounts = mx.array(list(found.values()), dtype=logits.dtype)
        logits[..., ids] = logits[..., ids] - amounts
        return logits
