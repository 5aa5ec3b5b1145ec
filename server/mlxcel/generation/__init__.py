"""What every API family and the engine share, and nothing else: the family-neutral
``GenerationRequest``, the engine's token events, the typed output pieces and the one hold-back
rule for text that may still become a marker. Imports nothing from the rest of the server."""

from __future__ import annotations

from .events import (
    DraftStats,
    EngineEvent,
    Finished,
    FinishReason,
    PromptProgress,
    TokenDelta,
    TokenLogprob,
    TopLogprob,
)
from .request import (
    PRIORITY_RANK,
    GenerationRequest,
    LogitsProcessor,
    LogitsProcessorFactory,
    LoopDetection,
    Priority,
    SamplingParams,
    VisionInputs,
)

__all__ = [
    "PRIORITY_RANK", "DraftStats", "EngineEvent", "FinishReason", "Finished",
    "GenerationRequest", "LogitsProcessor", "LogitsProcessorFactory", "LoopDetection",
    "Priority", "PromptProgress", "SamplingParams", "TokenDelta", "TokenLogprob", "TopLogprob",
    "VisionInputs",
]
