"""Drafters for speculative decoding: cheap guesses of the next few tokens, which the model
then verifies in one forward pass.

* ``DraftModelDrafter``: a smaller model sharing the tokenizer decodes ahead greedily; it keeps
  its own KV cache and rewinds it to the longest prefix it shares with the accepted history.
* ``PromptLookupDrafter``: no second model; the tokens that followed the most recent earlier
  occurrence of the history's last n-gram (longest n first) in the prompt and the text so far.

A drafter only proposes; exactness is the verify loop's job (``engine/speculative.py``).
"""

from __future__ import annotations

from typing import Any, Protocol, cast

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import can_trim_prompt_cache, make_prompt_cache, trim_prompt_cache

DRAFT_MODEL_KIND = "draft-model"
PROMPT_LOOKUP_KIND = "prompt-lookup"


class Drafter(Protocol):
    kind: str

    def propose(self, history: list[int], n: int) -> list[int]:
        """Up to ``n`` guessed tokens following ``history`` (every token so far, in order)."""
        ...


class PromptLookupDrafter:
    """n-gram lookup in the request's own tokens (llama.cpp's ngram-simple, mlx-lm's and
    transformers' prompt lookup decoding)."""

    kind = PROMPT_LOOKUP_KIND

    def __init__(self, max_ngram: int = 3, min_ngram: int = 1) -> None:
        self.max_ngram = max_ngram
        self.min_ngram = max(1, min_ngram)

    def propose(self, history: list[int], n: int) -> list[int]:
        if n <= 0:
            return []
        for size in range(min(self.max_ngram, len(history) - 1), self.min_ngram - 1, -1):
            tail = history[-size:]
            # The most recent earlier occurrence: its continuation is the likeliest repeat.
            for start in range(len(history) - size - 1, -1, -1):
                if history[start:start + size] == tail:
                    return history[start + size:start + size + n]
        return []


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class DraftModelDrafter:
    """Greedy drafts from a small model; one instance per request (it owns a KV cache)."""

    kind = DRAFT_MODEL_KIND

    def __init__(self, model: nn.Module, prefill_step_size: int = 256) -> None:
        self.model = model
        self.prefill_step_size = max(1, prefill_step_size)
        self.cache: list[Any] = make_prompt_cache(model)
        self.held: list[int] = []  # the tokens whose keys and values the cache holds

    @staticmethod
    def supports(model: nn.Module) -> bool:
        return bool(can_trim_prompt_cache(make_prompt_cache(model)))

    def _rewind(self, keep: int) -> None:
        if len(self.held) > keep:
            trim_prompt_cache(self.cache, len(self.held) - keep)
            del self.held[keep:]

    def _feed(self, tokens: list[int]) -> mx.array:
        """Run ``tokens`` through the draft model; the logits after the last one."""
        while len(tokens) > self.prefill_step_size:
            chunk, tokens = tokens[:self.prefill_step_size], tokens[self.prefill_step_size:]
            self.model(mx.array(chunk)[None], cache=self.cache)
            mx.eval([c.state for c in self.cache])
            self.held.extend(chunk)
        logits = self.model(mx.array(tokens)[None], cache=self.cache)[0, -1]
        self.held.extend(tokens)
        return logits

    def propose(self, history: list[int], n: int) -> list[int]:
        if n <= 0 or not history:
            return []
        # Keep what the cache shares with the history, but always feed at least one token.
        self._rewind(min(_common_prefix(self.held, history), len(history) - 1))
        pending = history[len(self.held):]
        drafts: list[int] = []
        for _ in range(n):
            token = cast(int, mx.argmax(self._feed(pending)).item())
            drafts.append(token)
            pending = [token]
        return drafts
