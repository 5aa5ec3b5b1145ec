"""Logits processors built from ``SamplingParams``: logit bias, repetition, presence and
frequency penalties (mlx-lm's), and DRY (``dry.py``).

A processor is mlx-lm's ``(tokens, logits) -> logits``: ``tokens`` is the sequence so far
(prompt and generated), ``logits`` one row ``(1, vocab)``.
"""

from __future__ import annotations

from collections.abc import Callable

import mlx.core as mx
from mlx_lm.sample_utils import make_logits_processors

from ..generation import SamplingParams
from .dry import DryPenalty, dry_config

LogitsProcessor = Callable[[mx.array, mx.array], mx.array]


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
    dry = dry_config(params)
    if dry.enabled:
        processors.append(DryPenalty(dry))
    return processors
