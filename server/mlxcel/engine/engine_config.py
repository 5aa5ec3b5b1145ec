"""The engine's settings, one ``EngineConfig`` per server: slots, queue, prompt cache,
speculative decoding and media bounds. ``settings/engine_options.py`` declares the flags that
fill it, and their declared defaults are this class's: an engine built without arguments is
the engine ``mlxcel-server`` ships."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..media.policy import MediaPolicy
from ..settings.catalog import default_of


def _shipped(field: str) -> Any:
    """The default of the setting that fills ``field`` (``settings/engine_options.py``)."""
    return default_of("engine", field)


@dataclass
class EngineConfig:
    model: str
    ctx_size: int = 0  # total context, divided among the slots; 0 = the model's own per slot
    parallel: int = _shipped("parallel")
    prefill_step_size: int = _shipped("prefill_step_size")
    max_queue: int = _shipped("max_queue")  # 0 = 4 x parallel
    cache_prompt: bool = _shipped("cache_prompt")
    cache_bytes: int = _shipped("cache_bytes")
    cache_entries: int = _shipped("cache_entries")
    cache_ttl_s: float = _shipped("cache_ttl_s")
    # --media-path roots and image bounds, for a vision-language model.
    media: MediaPolicy = dataclasses.field(default_factory=MediaPolicy)
    # Speculative decoding (single-sequence path only): a draft model sharing the tokenizer,
    # else prompt lookup; draft_max is the default number of drafted tokens per round.
    draft_model: str | None = None
    draft_max: int = _shipped("draft_max")
    prompt_lookup: bool = False
    # Every request on the single-sequence path (sharded serving: see engine/distributed.py).
    solo_only: bool = False
    # A stream's tokens gather this long between wake-ups of the event loop (engine/handle.py).
    stream_interval_ms: float = _shipped("stream_interval_ms")

    def __post_init__(self) -> None:
        if self.solo_only and self.parallel != 1:
            raise ValueError("solo_only serves one request at a time: parallel must be 1")

    @property
    def slot_ctx_size(self) -> int:
        return self.ctx_size // max(self.parallel, 1) if self.ctx_size > 0 else 0
