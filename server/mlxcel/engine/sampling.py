"""Sampler and logits-processor chains built from per-request ``SamplingParams``.

Uses mlx-lm's ``sample_utils`` (the same samplers mlx-lm's server uses) so behaviour matches it.
"""

from __future__ import annotations

from collections.abc import Callable

import mlx.core as mx
from mlx_lm.sample_utils import make_logits_processors, make_sampler

from ..errors import InvalidRequestError
from .request import SamplingParams

Sampler = Callable[[mx.array], mx.array]
LogitsProcessor = Callable[[mx.array, mx.array], mx.array]


def build_sampler(params: SamplingParams, vocab_size: int) -> Sampler:
    """Temperature 0 is greedy; top_k 0 or at/above the vocabulary keeps every token."""
    top_k = params.top_k if 0 < params.top_k < vocab_size else 0
    top_p = params.top_p if 0.0 < params.top_p < 1.0 else 0.0
    return make_sampler(
        temp=max(params.temperature, 0.0),
        top_p=top_p,
        min_p=max(params.min_p, 0.0),
        top_k=top_k,
    )


def build_logits_processors(params: SamplingParams) -> list[LogitsProcessor]:
    repetition = params.repetition_penalty
    return make_logits_processors(
        logit_bias=params.logit_bias or None,
        repetition_penalty=repetition if repetition and repetition != 1.0 else None,
        repetition_context_size=params.repetition_context_size,
        presence_penalty=params.presence_penalty or None,
        frequency_penalty=params.frequency_penalty or None,
    )


def check_logit_bias(params: SamplingParams, vocab_size: int) -> None:
    """A bias key outside the vocabulary would index past the logits (MLX aborts the process)."""
    for token_id in params.logit_bias or {}:
        if not 0 <= token_id < vocab_size:
            raise InvalidRequestError(
                f"logit_bias token id {token_id} is out of vocabulary range "
                f"(vocab_size {vocab_size}).",
                param="logit_bias",
            )
