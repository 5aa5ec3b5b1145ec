"""DRY ("don't repeat yourself") repetition penalty as an mlx-lm logits processor.

A token that would extend a sequence already seen in the recent context is penalised by
``multiplier * base ** (match_length - allowed_length)`` once the repeated run reaches
``allowed_length``. Matches never cross a sequence-breaker token (a token whose text contains
one of the breaker strings), so a newline or a colon resets the run. Same parameters and
semantics as llama.cpp's DRY sampler; the implementation is our own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import mlx.core as mx
import numpy as np

DEFAULT_BREAKERS: tuple[str, ...] = ("\n", ":", '"', "*")
# Penalties saturate here: past this the token is effectively banned anyway.
MAX_EXPONENT = 40


@dataclass(frozen=True)
class DryParams:
    multiplier: float
    base: float = 1.75
    allowed_length: int = 2
    penalty_last_n: int = 64  # 0 = disabled, -1 = the whole context
    breakers: tuple[str, ...] = DEFAULT_BREAKERS


def breaker_token_ids(vocab: dict[str, int], decode: Callable[[list[int]], str],
                      breakers: Iterable[str]) -> frozenset[int]:
    """Token ids whose decoded text contains any breaker string."""
    wanted = [b for b in breakers if b]
    if not wanted:
        return frozenset()
    return frozenset(
        token_id for token_id in vocab.values()
        if any(b in decode([token_id]) for b in wanted)
    )


def dry_penalties(history: list[int], params: DryParams,
                  breakers: frozenset[int]) -> dict[int, float]:
    """Penalty per candidate token given the tokens so far (oldest first)."""
    if params.multiplier <= 0 or len(history) < 2:
        return {}
    window = history if params.penalty_last_n < 0 else history[-params.penalty_last_n:]
    if params.penalty_last_n == 0:
        return {}
    last = len(window) - 1
    best: dict[int, int] = {}
    for j in range(last):  # window[j + 1] is the token that followed an earlier occurrence
        length = 0
        while (j - length >= 0 and window[j - length] == window[last - length]
               and window[j - length] not in breakers and last - length > j):
            length += 1
        follower = window[j + 1]
        if length > 0 and follower not in breakers and length > best.get(follower, 0):
            best[follower] = length
    out: dict[int, float] = {}
    for token, length in best.items():
        if length >= params.allowed_length:
            exponent = min(length - params.allowed_length, MAX_EXPONENT)
            out[token] = params.multiplier * params.base ** exponent
    return out


def make_dry_processor(params: DryParams, breakers: frozenset[int]
                       ) -> Callable[[mx.array, mx.array], mx.array]:
    """A fresh processor (mlx-lm signature: all tokens so far, logits of the next step)."""

    def process(tokens: mx.array, logits: mx.array) -> mx.array:
        penalties = dry_penalties([int(t) for t in np.array(tokens).reshape(-1)], params,
                                  breakers)
        if not penalties:
            return logits
        ids = mx.array(list(penalties), dtype=mx.int32)
        values = mx.array(list(penalties.values()), dtype=logits.dtype)
        logits[..., ids] = logits[..., ids] - values
        return logits

    return process
