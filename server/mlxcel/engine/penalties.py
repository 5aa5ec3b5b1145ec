"""Logits processors built from ``SamplingParams``: logit bias, repetition, presence and
frequency penalties (mlx-lm's), and DRY ("don't repeat yourself").

A processor is mlx-lm's ``(tokens, logits) -> logits``: ``tokens`` is the sequence so far
(prompt and generated), ``logits`` one row ``(1, vocab)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import mlx.core as mx
from mlx_lm.sample_utils import make_logits_processors

from .request import SamplingParams

LogitsProcessor = Callable[[mx.array, mx.array], mx.array]
# Longest repeated run DRY measures; bounds the work per step on pathological inputs.
DRY_MAX_MATCH = 64


def dry_penalties(
    tokens: Sequence[int], breakers: frozenset[int], allowed_length: int, max_match: int
) -> dict[int, int]:
    """For each token that would extend a repeat of the sequence's tail, the length of the
    repeat it would extend (only lengths >= ``allowed_length``)."""
    n = len(tokens)
    if n < 2 or tokens[-1] in breakers:
        return {}
    last = tokens[-1]
    found: dict[int, int] = {}
    for i in range(n - 1):
        if tokens[i] != last:
            continue
        candidate = tokens[i + 1]
        if candidate in breakers:
            continue
        length = 1
        while (
            length < max_match
            and i - length >= 0
            and tokens[i - length] == tokens[n - 1 - length]
            and tokens[i - length] not in breakers
        ):
            length += 1
        if length >= allowed_length and length > found.get(candidate, 0):
            found[candidate] = length
    return found


class DryPenalty:
    """DRY: penalize the token that would continue a repeated sequence, growing exponentially
    with the repeat's length: ``multiplier * base ** (length - allowed_length)``."""

    def __init__(self, params: SamplingParams) -> None:
        self.multiplier = params.dry_multiplier
        self.base = params.dry_base
        self.allowed = max(1, params.dry_allowed_length)
        self.last_n = params.dry_penalty_last_n
        self.breakers = frozenset(params.dry_sequence_breakers)

    def _amount(self, length: int) -> float:
        # Extreme (but valid) base/multiplier values saturate to a ban instead of raising.
        return min(self.multiplier * _pow_or_inf(self.base, length - self.allowed), 1e30)

    def __call__(self, tokens: mx.array, logits: mx.array) -> mx.array:
        history: list[int] = tokens.tolist()  # type: ignore[assignment]
        if self.last_n > 0:
            history = history[-self.last_n :]
        found = dry_penalties(history, self.breakers, self.allowed, DRY_MAX_MATCH)
        if not found:
            return logits
        ids = mx.array(list(found))
        amounts = mx.array([self._amount(n) for n in found.values()], dtype=logits.dtype)
        logits[:, ids] = logits[:, ids] - amounts
        return logits


def _pow_or_inf(base: float, exponent: int) -> float:
    try:
        return float(base**exponent)
    except OverflowError:
        return math.inf


def build_logits_processors(params: SamplingParams) -> list[LogitsProcessor]:
    repetition = params.repetition_penalty
    processors: list[LogitsProcessor] = make_logits_processors(
        logit_bias=params.logit_bias or None,
        repetition_penalty=repetition if repetition and repetition != 1.0 else None,
        repetition_context_size=params.repetition_context_size,
        presence_penalty=params.presence_penalty or None,
        presence_context_size=params.presence_context_size,
        frequency_penalty=params.frequency_penalty or None,
        frequency_context_size=params.frequency_context_size,
    )
    if params.dry_multiplier > 0.0:
        processors.append(DryPenalty(params))
    return processors
