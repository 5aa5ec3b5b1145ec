"""Speculative decoding on the single-sequence path: a drafter guesses the next k tokens, the
model scores the last accepted token plus the k guesses in one forward pass, and the longest
prefix of guesses that equals what the sampler picks is kept, plus the sampler's own token at
the first mismatch (or after the last guess). The cache is trimmed back over rejected guesses.

Exactness: every emitted token is the one the request's sampler draws from the model's
distribution at that position given the accepted prefix, so greedy output is token for token
the output without a drafter (up to floating-point differences between scoring k+1 positions in
one pass and one at a time). Rows are sampled lazily (row i only when guesses 0..i-1 matched), so
a seeded sampler draws exactly as many times as without speculation.

The first token comes from prefill as usual; a request that ends there ran no verify round.
Requests with logits processors (penalties, logit_bias, grammars) never come here: processors
are stateful over the token history and are applied per decode step (engine/worker.py,
``Engine._solo_run``).
"""

from __future__ import annotations

from collections import deque
from typing import Any, cast

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.cache import can_trim_prompt_cache, trim_prompt_cache

from ..generation import DraftStats, SamplingParams
from .drafters import Drafter, DraftModelDrafter, PromptLookupDrafter
from .sampling import greedy_sampler
from .solo import SoloResponse

# A request's num_draft_tokens is clamped to this (a longer guess is almost never accepted).
MAX_DRAFT_TOKENS = 32


def can_speculate(cache: list[Any]) -> bool:
    """Rejected guesses must be trimmed off the cache (KV caches can; recurrent ones cannot)."""
    return bool(cache) and bool(can_trim_prompt_cache(cache))


class SpeculativeRun:
    """Shaped like ``SoloRun`` (``next``, ``held_tokens``, ``close``, ``cache``), so the engine
    drives either the same way."""

    def __init__(
        self,
        model: nn.Module,
        prompt: list[int],
        cache: list[Any],
        context: list[int],
        sampler: Any,
        drafter: Drafter,
        num_draft: int,
        max_tokens: int,
        prefill_step_size: int,
    ) -> None:
        self.model = model
        self.cache = cache
        self.sampler = sampler
        self.drafter = drafter
        self.num_draft = max(0, min(num_draft, MAX_DRAFT_TOKENS))
        self.max_tokens = max_tokens
        self.prefill_step_size = max(1, prefill_step_size)
        self.tokens = list(context) + list(prompt)  # every token so far, accepted ones included
        self.count = 0  # tokens handed to the engine
        self.produced = 0  # tokens accepted (handed out or waiting in ``_ready``)
        self.drafted = self.accepted = self.rounds = 0
        self._ready: deque[tuple[int, mx.array]] = deque()
        self._prompt: list[int] | None = list(prompt)

    @property
    def draft_stats(self) -> DraftStats | None:
        """The drafter's totals, once it ran at least one verify round."""
        if self.rounds == 0:
            return None
        return DraftStats(self.drafter.kind, self.drafted, self.accepted, self.rounds)

    # -- model ------------------------------------------------------------------------------
    def _logprobs(self, tokens: list[int]) -> mx.array:
        logits = self.model(mx.array(tokens)[None], cache=self.cache)[0].astype(mx.float32)
        return logits - mx.logsumexp(logits, axis=-1, keepdims=True)

    def _sample(self, row: mx.array) -> int:
        return cast(int, self.sampler(row[None]).reshape(-1)[0].item())

    def _accept(self, token: int, logprobs: mx.array) -> None:
        self._ready.append((token, logprobs))
        self.tokens.append(token)
        self.produced += 1

    def _prefill(self, prompt: list[int]) -> None:
        """All but the last prompt token in chunks, then the first token from the last."""
        while len(prompt) > 1:
            n = min(self.prefill_step_size, len(prompt) - 1)
            self.model(mx.array(prompt[:n])[None], cache=self.cache)
            mx.eval([c.state for c in self.cache])
            prompt = prompt[n:]
        logprobs = self._logprobs(prompt)[-1]
        self._accept(self._sample(logprobs), logprobs)

    def _round(self) -> None:
        """One verify round (or a plain step when the drafter has nothing to offer)."""
        last = self.tokens[-1]  # accepted, not yet in the cache
        budget = min(self.num_draft, self.max_tokens - self.produced - 1)
        drafts = self.drafter.propose(self.tokens, budget) if budget > 0 else []
        drafts = drafts[:max(budget, 0)]
        rows = self._logprobs([last] + drafts)
        # Greedy: one argmax over every row; otherwise row by row, only as far as needed.
        greedy = (cast(list[int], mx.argmax(rows, axis=-1).tolist())
                  if self.sampler is greedy_sampler else None)
        n = 0
        while True:
            token = greedy[n] if greedy is not None else self._sample(rows[n])
            self._accept(token, rows[n])
            if n == len(drafts) or token != drafts[n]:
                break
            n += 1
        if drafts:
            self.rounds += 1
            self.drafted += len(drafts)
            self.accepted += n
            if len(drafts) > n:  # the rejected guesses' keys and values
                trim_prompt_cache(self.cache, len(drafts) - n)

    # -- the SoloRun interface ----------------------------------------------------------------
    def next(self) -> SoloResponse:
        if self.count >= self.max_tokens:
            raise StopIteration
        if not self._ready:
            if self._prompt is not None:
                prompt, self._prompt = self._prompt, None
                self._prefill(prompt)
            else:
                self._round()
        token, logprobs = self._ready.popleft()
        self.count += 1
        done = self.count >= self.max_tokens
        return SoloResponse(token, logprobs, "length" if done else None,
                            self.cache if done else None, self.held_tokens() if done else None)

    def held_tokens(self) -> list[int]:
        offset = int(getattr(self.cache[0], "offset", 0)) if self.cache else 0
        return self.tokens[:offset]

    def close(self) -> None:
        self._ready.clear()


def drafts(params: SamplingParams, has_processors: bool, configured: bool,
           default_draft: int) -> bool:
    """Whether ``choose_drafter`` gives the request a drafter (the scheduler asks before it
    builds one: engine/step_plan.py)."""
    n = default_draft if params.num_draft_tokens is None else params.num_draft_tokens
    return configured and params.speculative and not has_processors and n > 0


def choose_drafter(
    params: SamplingParams,
    has_processors: bool,
    draft_model: nn.Module | None,
    prompt_lookup: bool,
    default_draft: int,
    prefill_step_size: int,
) -> tuple[Drafter, int] | None:
    """The drafter for one request and its draft length, or None to decode plainly: no drafter
    configured, ``draft_model: null``, ``num_draft_tokens: 0``, or logits processors."""
    configured = draft_model is not None or prompt_lookup
    if not drafts(params, has_processors, configured, default_draft):
        return None
    n = default_draft if params.num_draft_tokens is None else params.num_draft_tokens
    if draft_model is not None:
        return DraftModelDrafter(draft_model, prefill_step_size), n
    if prompt_lookup:
        return PromptLookupDrafter(), n
    return None
