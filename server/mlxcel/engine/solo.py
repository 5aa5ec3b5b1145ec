"""The single-sequence fast path: a request that arrives at an idle engine decodes with
mlx-lm's ``generate_step`` (one ``KVCache``, no batch bookkeeping), which on MLX's CPU backend is
several times faster per token than a batch of one. Requests that arrive meanwhile go to the
batch; a sequence never moves between the two paths, so its numerics stay those of its path.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.generate import generate_step


@dataclass
class SoloResponse:
    """Shaped like a ``BatchGenerator`` response, so one code path handles both."""

    token: int
    logprobs: mx.array
    finish_reason: str | None
    prompt_cache: list[Any] | None
    all_tokens: list[int] | None


class SoloRun:
    def __init__(
        self,
        model: nn.Module,
        prompt: list[int],
        cache: list[Any],
        context: list[int],
        sampler: Any,
        processors: list[Any],
        max_tokens: int,
        prefill_step_size: int,
    ) -> None:
        self.cache = cache
        self.tokens = list(context) + list(prompt)  # what the cache will hold, in order
        self.max_tokens = max_tokens
        self.count = 0
        self._steps: Iterator[tuple[Any, mx.array]] = generate_step(
            mx.array(prompt), model, max_tokens=max_tokens, sampler=sampler,
            logits_processors=processors or None, prompt_cache=cache,
            prefill_step_size=prefill_step_size,
        )

    def next(self) -> SoloResponse:
        token, logprobs = next(self._steps)
        self.count += 1
        self.tokens.append(int(token))
        done = self.count >= self.max_tokens
        return SoloResponse(int(token), logprobs, "length" if done else None,
                            self.cache if done else None, self.held_tokens() if done else None)

    def held_tokens(self) -> list[int]:
        """The token ids whose keys and values the cache holds (generate_step feeds each
        yielded token before yielding it, except possibly the very last)."""
        offset = int(getattr(self.cache[0], "offset", 0)) if self.cache else 0
        return self.tokens[:offset]

    def close(self) -> None:
        close = getattr(self._steps, "close", None)
        if close is not None:
            close()
