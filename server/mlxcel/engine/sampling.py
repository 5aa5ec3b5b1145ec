"""The per-request sampler: temperature, top_k, top_p, min_p, p_less and XTC, drawing from the
request's own random key.

Each request owns a ``RequestSampler`` holding an ``mx.random`` key derived from its seed, so
the tokens it draws do not depend on which other requests share the batch (mlx-lm's samplers
draw from the global generator, which every sequence in a batch would share). Filters work on
the log-probability row of one sequence, shape ``(1, vocab)``.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import mlx.core as mx

from ..errors import InvalidRequestError
from ..generation import SamplingParams

Sampler = Callable[[mx.array], mx.array]
NEG_INF = float("-inf")
# mx.random.key takes an unsigned 64-bit seed; llama-server's "no seed" is u64::MAX.
SEED_MASK = (1 << 64) - 1


def _keep(logits: mx.array, mask: mx.array) -> mx.array:
    return mx.where(mask, logits, mx.array(NEG_INF, dtype=logits.dtype))


def _top_k(logits: mx.array, k: int) -> mx.array:
    kth = mx.sort(logits, axis=-1)[..., -k][..., None]
    return _keep(logits, logits >= kth)


def _top_p(logits: mx.array, top_p: float) -> mx.array:
    probs = mx.softmax(logits, axis=-1)
    order = mx.argsort(-probs, axis=-1)
    sorted_probs = mx.take_along_axis(probs, order, axis=-1)
    # A token stays when the mass strictly before it is below top_p (the first always stays).
    before = mx.cumsum(sorted_probs, axis=-1) - sorted_probs
    keep_sorted = before < top_p
    keep = mx.put_along_axis(mx.zeros_like(keep_sorted), order, keep_sorted, axis=-1)
    return _keep(logits, keep)


def _min_p(logits: mx.array, min_p: float) -> mx.array:
    probs = mx.softmax(logits, axis=-1)
    return _keep(logits, probs >= min_p * probs.max(axis=-1, keepdims=True))


def _p_less(logits: mx.array) -> mx.array:
    """Keep tokens with p >= sum(p^2); the argmax always passes (max p >= sum p^2)."""
    probs = mx.softmax(logits, axis=-1)
    threshold = (probs * probs).sum(axis=-1, keepdims=True)
    return _keep(logits, probs >= threshold)


def _xtc(logits: mx.array, threshold: float, probability: float, key: mx.array) -> mx.array:
    """Exclude Top Choices: with ``probability``, drop every token at or above ``threshold``
    except the least likely of them (nothing happens unless at least two qualify)."""
    probs = mx.softmax(logits, axis=-1)
    above = probs >= threshold
    n_above = above.sum(axis=-1, keepdims=True)
    least = mx.where(above, probs, mx.array(2.0)).min(axis=-1, keepdims=True)
    drop = above & (probs > least) & (n_above >= 2)
    fire = mx.random.uniform(key=key) < probability
    return _keep(logits, ~(drop & fire))


class RequestSampler:
    """``(logprobs (1, vocab)) -> token (1,)``, with the request's own random stream."""

    def __init__(self, params: SamplingParams, vocab_size: int) -> None:
        self.params = params
        self.top_k = params.top_k if 0 < params.top_k < vocab_size else 0
        seed = params.seed if params.seed is not None else secrets.randbits(64)
        self._key = mx.random.key(seed & SEED_MASK)
        self._before = self._key

    def rewind(self) -> None:
        """Undo the last call's draws (its token was dropped): the next call draws the same."""
        self._key = self._before

    @property
    def greedy(self) -> bool:
        return self.params.temperature <= 0.0

    def _split(self) -> mx.array:
        self._key, sub = mx.random.split(self._key)
        return sub

    def __call__(self, logprobs: mx.array) -> mx.array:
        p = self.params
        self._before = self._key
        if self.greedy:
            return mx.argmax(logprobs, axis=-1)
        logits = logprobs.astype(mx.float32) / p.temperature
        ids = None
        if self.top_k:
            # Keep only the k best as candidates: every later filter then works on k values.
            ids = mx.argpartition(-logits, kth=self.top_k - 1, axis=-1)[..., : self.top_k]
            logits = mx.take_along_axis(logits, ids, axis=-1)
        logits = _probability_filters(logits, p)
        if p.xtc_probability > 0.0 and p.xtc_threshold < 0.5:
            logits = _xtc(logits, p.xtc_threshold, p.xtc_probability, self._split())
        choice = mx.random.categorical(logits, axis=-1, key=self._split())
        if ids is None:
            return choice
        return mx.take_along_axis(ids, choice[..., None], axis=-1)[..., 0]


def post_sampling_logprobs(logprobs: mx.array, params: SamplingParams) -> mx.array:
    """The distribution the sampler draws from (llama-server's ``post_sampling_probs``): the
    model's log probabilities after temperature, top_k, p_less, top_p and min_p, renormalized,
    ``-inf`` where a filter removed the token. Greedy decoding draws the argmax for sure. XTC,
    a random draw of its own, is left out."""
    values = logprobs.astype(mx.float32)
    if params.temperature <= 0.0:
        best = mx.argmax(values, axis=-1, keepdims=True)
        ids = mx.arange(values.shape[-1])
        return mx.where(ids == best, mx.array(0.0), mx.array(NEG_INF))
    logits = values / params.temperature
    if 0 < params.top_k < values.shape[-1]:
        logits = _top_k(logits, params.top_k)
    logits = _probability_filters(logits, params)
    return logits - mx.logsumexp(logits, axis=-1, keepdims=True)


def _probability_filters(logits: mx.array, params: SamplingParams) -> mx.array:
    """p_less, top_p and min_p, in the sampler's order."""
    if params.p_less:
        logits = _p_less(logits)
    if 0.0 < params.top_p < 1.0:
        logits = _top_p(logits, params.top_p)
    if params.min_p > 0.0:
        logits = _min_p(logits, params.min_p)
    return logits


def greedy_sampler(logprobs: mx.array) -> mx.array:
    return mx.argmax(logprobs, axis=-1)


def build_sampler(params: SamplingParams, vocab_size: int) -> Sampler:
    """The sampler for one request: a fresh random stream per request; greedy requests share
    one function, so a batch of them is sampled in one call (mlx-lm batches a shared sampler)."""
    if params.temperature <= 0.0:
        return greedy_sampler
    return RequestSampler(params, vocab_size)


def check_logit_bias(params: SamplingParams, vocab_size: int) -> None:
    """A bias key outside the vocabulary would index past the logits (MLX aborts the process)."""
    for token_id in params.logit_bias or {}:
        if not 0 <= token_id < vocab_size:
            raise InvalidRequestError(
                f"logit_bias token id {token_id} is out of vocabulary range "
                f"(vocab_size {vocab_size}).",
                param="logit_bias",
            )
