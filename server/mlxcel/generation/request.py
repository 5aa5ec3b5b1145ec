"""The family-neutral request every API adapter translates into.

Adapters (``protocol/<family>.py``) build a ``GenerationRequest`` from token ids and sampling
settings; the engine answers with the events in ``events.py``. Nothing here knows HTTP, MLX
or any API family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

# X-Priority: the order in which queued requests are admitted to a slot.
Priority = Literal["high", "normal", "low"]
PRIORITY_RANK: dict[str, int] = {"high": 0, "normal": 1, "low": 2}

# mlx-lm's logits-processor signature: (generated token ids so far, logits) -> logits.
LogitsProcessor = Callable[[Any, Any], Any]
# Made fresh for each generation, so a stateful processor (a grammar matcher) starts clean.
LogitsProcessorFactory = Callable[[], LogitsProcessor]


@dataclass(frozen=True)
class LoopDetection:
    """Tail-repetition ("loop") detection: stop when a pattern of ``min_pattern_size`` to
    ``max_pattern_size`` tokens repeats ``min_count`` times in a row at the end of the output."""

    max_pattern_size: int = 0
    min_pattern_size: int = 1
    min_count: int = 0

    @property
    def enabled(self) -> bool:
        return self.max_pattern_size > 0 and self.min_count >= 2


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
    # mlx-lm's windows (tokens of history) for the presence and frequency penalties.
    presence_context_size: int = 20
    frequency_context_size: int = 20
    logit_bias: dict[int, float] | None = None
    p_less: bool = False
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = 0  # 0 = the whole context
    # Each breaker as token ids: a head token and the tokens that must follow it (engine/dry.py).
    dry_sequence_breakers: tuple[tuple[int, ...], ...] = ()
    xtc_probability: float = 0.0
    xtc_threshold: float = 0.1
    # Not sampling strictly, but per-request generation policy carried the same way:
    # None: the server-wide setting; False: prefill cold and donate nothing back.
    cache_prompt: bool | None = None
    # None: the server's policy (MLXCEL_LOOP_DETECTION, then the model family's default).
    loop_detection: LoopDetection | None = None
    # Speculative decoding: False (mlx-lm's ``draft_model: null``) decodes this request without
    # the server's drafter; ``num_draft_tokens`` None takes the server's --draft-max.
    speculative: bool = True
    num_draft_tokens: int | None = None


@dataclass(frozen=True)
class VisionInputs:
    """A vision-language prompt's pixels, from the model's processor: ``pixel_values`` and the
    extra arrays its vision tower reads (e.g. ``image_grid_thw``), as numpy arrays."""

    pixel_values: Any
    extras: dict[str, Any]
    image_count: int


@dataclass(frozen=True)
class GenerationRequest:
    """What to generate: prompt token ids, limits, stops and sampling."""

    prompt_tokens: tuple[int, ...]
    max_tokens: int
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stop: tuple[str, ...] = ()
    logprobs: bool = False
    top_logprobs: int = 0
    # The logprobs after the sampling chain (temperature, top_k, top_p, min_p, p_less) rather
    # than the model's: llama-server's post_sampling_probs.
    post_sampling_probs: bool = False
    # Send PromptProgress events while the prompt is read (llama-server's return_progress).
    report_progress: bool = False
    ignore_eos: bool = False
    logits_processor_factories: tuple[LogitsProcessorFactory, ...] = ()
    request_id: str = ""
    priority: Priority = "normal"
    # Streaming /v1/completions and native /completion are not counted in /metrics.
    count_in_metrics: bool = True
    # Images for a vision-language model (None: a text prompt).
    vision: VisionInputs | None = None
    # A LoRA adapter directory (already confined to --adapter-dir): decoded unbatched on the
    # base model with the adapter applied, outside the prompt cache.
    adapter: str | None = None
