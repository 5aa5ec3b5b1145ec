"""The engine's settings, one ``EngineConfig`` per server: slots, queue, prompt cache,
speculative decoding and media bounds (``settings/engine_options.py`` declares the flags that
fill it)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..media.policy import MediaPolicy
from .prompt_cache import DEFAULT_CAPACITY_BYTES, DEFAULT_MAX_ENTRIES, DEFAULT_TTL_S


@dataclass
class EngineConfig:
    model: str
    ctx_size: int = 0  # total context, divided among the slots; 0 = the model's own per slot
    parallel: int = 1  # the CLI's default is 4 (--parallel)
    prefill_step_size: int = 256
    max_queue: int = 0  # 0 = 4 x parallel
    cache_prompt: bool = True
    cache_bytes: int = DEFAULT_CAPACITY_BYTES
    cache_entries: int = DEFAULT_MAX_ENTRIES
    cache_ttl_s: float = DEFAULT_TTL_S
    # --media-path roots and image bounds, for a vision-language model.
    media: MediaPolicy = dataclasses.field(default_factory=MediaPolicy)
    # Speculative decoding (single-sequence path only): a draft model sharing the tokenizer,
    # else prompt lookup; draft_max is the default number of drafted tokens per round.
    draft_model: str | None = None
    draft_max: int = 3
    prompt_lookup: bool = False
    # Every request on the single-sequence path (sharded serving: see engine/distributed.py).
    solo_only: bool = False
    # A stream's tokens gather this long between wake-ups of the event loop (engine/handle.py).
    stream_interval_ms: float = 0.0

    def __post_init__(self) -> None:
        if self.solo_only and self.parallel != 1:
            raise ValueError("solo_only serves one request at a time: parallel must be 1")

    @property
    def slot_ctx_size(self) -> int:
        return self.ctx_size // max(self.parallel, 1) if self.ctx_size > 0 else 0
