"""The sampling fields shared by the OpenAI generation routes, and their resolution to
``SamplingParams`` against the server defaults."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .. import limits
from ..chat.thinking_budget import requested_budget
from ..config import GenerationDefaults
from ..errors import InvalidRequestError
from ..generation import LoopDetection, SamplingParams
from .field_limits import Identifier
from .types import INT32_MAX, Int, Omittable


def logit_bias_count(value: Any) -> Any:
    """``logit_bias`` is counted before its entries are validated (``--max-logit-bias``)."""
    problem = limits.logit_bias_problem(value)
    if problem:
        raise ValueError(problem)
    return value


class StreamOptions(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    include_usage: Omittable[bool] = None  # a boolean in OpenAI's spec, never null


class OpenAISamplingFields(BaseModel):
    """Fields common to /v1/chat/completions and /v1/completions (strict: no lax booleans)."""

    model_config = ConfigDict(strict=True, extra="allow")

    # A string wherever a public API names it (OpenAI's and Anthropic's specs); optional here,
    # since the server serves the model it loaded, but never null.
    model: Omittable[str] = None
    stream: bool | None = False
    stream_options: StreamOptions | None = None
    max_tokens: Int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    top_k: Int | None = Field(default=None, ge=0)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    seed: Int | None = None
    stop: str | list[str] | None = None
    n: Int | None = Field(default=None, ge=1)
    presence_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    repetition_penalty: float | None = Field(default=None, gt=0.0)
    repetition_context_size: Int | None = Field(default=None, ge=0, le=INT32_MAX)
    # mlx-lm's penalty windows (its default 20 when omitted).
    presence_context_size: Int | None = Field(default=None, ge=0, le=INT32_MAX)
    frequency_context_size: Int | None = Field(default=None, ge=0, le=INT32_MAX)
    # mlx-lm's model-selection fields, checked in ``mlx_lm_fields.check_model_fields``.
    adapters: str | None = None
    draft_model: str | None = None
    num_draft_tokens: Int | None = Field(default=None, ge=0)
    logit_bias: dict[str, float] | None = None
    user: Identifier | None = None  # bounded: field_limits.py
    ignore_eos: bool | None = None
    p_less: bool | None = None
    dry_multiplier: float | None = Field(default=None, ge=0.0)
    dry_base: float | None = Field(default=None, ge=1.0)
    dry_allowed_length: Int | None = Field(default=None, ge=0)
    dry_penalty_last_n: Int | None = Field(default=None, ge=-1)
    dry_sequence_breakers: list[Int] | None = None
    xtc_probability: float | None = Field(default=None, ge=0.0, le=1.0)
    xtc_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    max_pattern_size: Int | None = Field(default=None, ge=0)
    min_pattern_size: Int | None = Field(default=None, ge=0)
    min_count: Int | None = Field(default=None, ge=0)
    cache_prompt: bool | None = None
    # The thinking budget's three aliases (chat/thinking_budget.py); -1 = unlimited.
    thinking_budget_tokens: Int | None = None
    reasoning_budget_tokens: Int | None = None
    reasoning_budget: Int | None = None
    extra_body: dict[str, Any] | None = None

    _logit_bias_count = field_validator("logit_bias", mode="before")(logit_bias_count)

    @field_validator("stop")
    @classmethod
    def _stop_count(cls, value: str | list[str] | None) -> str | list[str] | None:
        problem = limits.stop_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    def stop_strings(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)

    def wants_usage_chunk(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    def thinking_budget(self) -> int | None:
        """The requested thinking budget, ``None`` when unlimited (400 on a bad value)."""
        return requested_budget(
            {name: getattr(self, name) for name in ("thinking_budget_tokens",
                                                    "reasoning_budget_tokens",
                                                    "reasoning_budget")})

    def check_n(self) -> None:
        if self.n is not None and self.n > 1:
            raise InvalidRequestError("Only n=1 is supported by this server.", param="n")

    def sampling(self, defaults: GenerationDefaults) -> SamplingParams:
        return SamplingParams(
            temperature=_pick(self.temperature, defaults.temperature),
            top_p=_pick(self.top_p, defaults.top_p),
            top_k=_pick(self.top_k, defaults.top_k),
            min_p=_pick(self.min_p, defaults.min_p),
            seed=normalize_seed(self.seed if self.seed is not None else defaults.seed),
            repetition_penalty=_pick(self.repetition_penalty, defaults.repeat_penalty),
            repetition_context_size=_pick(self.repetition_context_size, defaults.repeat_last_n),
            presence_penalty=_pick(self.presence_penalty, defaults.presence_penalty),
            presence_context_size=_pick(self.presence_context_size, MLX_LM_CONTEXT_SIZE),
            frequency_context_size=_pick(self.frequency_context_size, MLX_LM_CONTEXT_SIZE),
            frequency_penalty=_pick(self.frequency_penalty, defaults.frequency_penalty),
            logit_bias=self._logit_bias(),
            p_less=bool(self.p_less),
            dry_multiplier=_pick(self.dry_multiplier, defaults.dry_multiplier),
            dry_base=_pick(self.dry_base, defaults.dry_base),
            dry_allowed_length=_pick(self.dry_allowed_length, defaults.dry_allowed_length),
            dry_penalty_last_n=max(0, _pick(self.dry_penalty_last_n, defaults.dry_penalty_last_n)),
            dry_sequence_breakers=tuple((i,) for i in self.dry_sequence_breakers or ()),
            xtc_probability=_pick(self.xtc_probability, defaults.xtc_probability),
            xtc_threshold=_pick(self.xtc_threshold, defaults.xtc_threshold),
            cache_prompt=self.cache_prompt_setting(),
            loop_detection=self._loop_detection(),
            # mlx-lm's `draft_model: null`: no drafting for this request (a named draft model
            # was checked against the server's in mlx_lm_fields.check_model_fields).
            speculative=not ("draft_model" in self.model_fields_set and self.draft_model is None),
            num_draft_tokens=self.num_draft_tokens,
        )

    def cache_prompt_setting(self) -> bool | None:
        """``cache_prompt`` at the root (also where the OpenAI SDK flattens ``extra_body``),
        else nested in a literal ``extra_body`` object; ``None`` when absent."""
        if self.cache_prompt is not None:
            return self.cache_prompt
        nested = (self.extra_body or {}).get("cache_prompt")
        if nested is None:
            return None
        if not isinstance(nested, bool):
            raise InvalidRequestError(
                "extra_body.cache_prompt must be a boolean.", param="extra_body.cache_prompt"
            )
        return nested

    def _loop_detection(self) -> LoopDetection | None:
        fields = (self.max_pattern_size, self.min_pattern_size, self.min_count)
        if all(f is None for f in fields):
            return None
        return LoopDetection(
            max_pattern_size=self.max_pattern_size or 0,
            min_pattern_size=max(self.min_pattern_size or 1, 1),
            min_count=self.min_count or 0,
        )

    def _logit_bias(self) -> dict[int, float] | None:
        if not self.logit_bias:
            return None
        try:
            return {int(k): float(v) for k, v in self.logit_bias.items()}
        except ValueError:
            raise InvalidRequestError(
                "logit_bias keys must be token ids.", param="logit_bias"
            ) from None


T = TypeVar("T", int, float)

# mlx-lm's default window for the presence and frequency penalties.
MLX_LM_CONTEXT_SIZE = 20

SEED_SPACE = 2**64


def normalize_seed(seed: int | None) -> int | None:
    """llama-server's -1 means "random"; any other integer (negative or beyond 64 bits, both
    valid JSON) is folded into MLX's unsigned 64-bit seed space."""
    if seed is None or seed == -1:
        return None
    return seed % SEED_SPACE


def _pick(value: T | None, default: T) -> T:
    return default if value is None else value
