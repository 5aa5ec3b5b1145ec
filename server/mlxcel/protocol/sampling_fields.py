"""The sampling fields shared by the OpenAI generation routes, and their resolution to
``SamplingParams`` against the server defaults."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..config import GenerationDefaults
from ..engine.request import SamplingParams
from ..errors import InvalidRequestError
from .types import Int


class StreamOptions(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    include_usage: bool | None = None


class OpenAISamplingFields(BaseModel):
    """Fields common to /v1/chat/completions and /v1/completions (strict: no lax booleans)."""

    model_config = ConfigDict(strict=True, extra="allow")

    model: str | None = None
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
    repetition_context_size: Int | None = Field(default=None, ge=0)
    logit_bias: dict[str, float] | None = None
    user: str | None = None
    ignore_eos: bool | None = None

    @field_validator("stop")
    @classmethod
    def _stop_count(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and len(value) > 16:
            raise ValueError("at most 16 stop sequences are supported")
        return value

    def stop_strings(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)

    def wants_usage_chunk(self) -> bool:
        return bool(self.stream and self.stream_options and self.stream_options.include_usage)

    def check_n(self) -> None:
        if self.n is not None and self.n > 1:
            raise InvalidRequestError("Only n=1 is supported by this server.", param="n")

    def sampling(self, defaults: GenerationDefaults) -> SamplingParams:
        return SamplingParams(
            temperature=_pick(self.temperature, defaults.temperature),
            top_p=_pick(self.top_p, defaults.top_p),
            top_k=_pick(self.top_k, defaults.top_k),
            min_p=_pick(self.min_p, defaults.min_p),
            # MLX seeds are unsigned 64-bit: a negative or huge seed is taken modulo 2**64.
            seed=self.seed % 2**64 if self.seed is not None else defaults.seed,
            repetition_penalty=_pick(self.repetition_penalty, defaults.repeat_penalty),
            repetition_context_size=_pick(self.repetition_context_size, defaults.repeat_last_n),
            presence_penalty=_pick(self.presence_penalty, defaults.presence_penalty),
            frequency_penalty=_pick(self.frequency_penalty, defaults.frequency_penalty),
            logit_bias=self._logit_bias(),
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


def _pick(value: T | None, default: T) -> T:
    return default if value is None else value
