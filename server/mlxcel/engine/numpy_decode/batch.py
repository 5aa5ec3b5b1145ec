"""Continuous batching over the NumPy forward pass, shaped like mlx-lm's ``BatchGenerator`` as
the engine uses it (``insert``, ``next``, ``remove``), so ``engine/worker.py`` drives either.

Each ``next()`` is one forward pass: one token for every sequence that is generating, plus up
to ``prefill_step_size`` prompt tokens of sequences still reading their prompt (first come,
first served; a long prompt is read in chunks over several steps, so it never stalls the
others' tokens for more than one chunk). A sequence's first token is sampled from its last
prompt position and handed out in the same step.

Differences from ``BatchGenerator`` that the engine relies on or benefits from:

- a token is handed out as soon as it is sampled and fed at the next step, so a finished
  sequence's cache holds every token but the last (``all_tokens`` says which), and the first
  token comes one forward pass sooner;
- greedy sequences without logits processors are sampled in numpy (``argmax``); the others get
  their logits row as an MLX array, run through their processors and sampler exactly as in a
  ``BatchGenerator``; a response's ``logprobs`` is computed only when read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, cast

import mlx.core as mx
import numpy as np

from ..sampling import greedy_sampler
from .forward import Piece, RopeTable, decode_few, decode_one, forward
from .kv import KVPool
from .weights import Weights

# An empty batch keeps a KV pool of up to this many bytes for the next arrivals: allocating it
# again costs page faults (on bench, 32 streams arriving at once waited 0.8-1.4 s for the
# pool to grow from nothing to 32 slots, every time the batch had emptied). A pool that long
# sequences grew past it is given back.
KEEP_POOL_BYTES = 512 * 2**20


@dataclass
class Response:
    """Shaped like ``GenerationBatch.Response``."""

    uid: int
    token: int
    finish_reason: str | None
    prompt_cache: list[Any] | None
    all_tokens: list[int] | None
    row: np.ndarray | None = field(default=None, repr=False)  # raw logits, greedy path
    processed: mx.array | None = field(default=None, repr=False)  # log-probabilities

    @cached_property
    def logprobs(self) -> mx.array:
        if self.processed is not None:
            return self.processed
        assert self.row is not None
        shifted = self.row - self.row.max()
        return mx.array(shifted - np.log(np.sum(np.exp(shifted))))


@dataclass
class Progress:
    """One prompt chunk read, shaped like a ``BatchGenerator`` prompt response: ``progress`` is
    (tokens of the inserted prompt read so far, its length)."""

    uid: int
    progress: tuple[int, int]


@dataclass
class _Sequence:
    uid: int
    slot: int
    pending: list[int]  # prompt tokens still to feed, or the sampled token to feed next
    fed: list[int]  # the tokens whose keys and values the slot holds
    max_tokens: int
    sampler: Callable[[mx.array], mx.array]
    processors: list[Any]
    generated: int = 0
    cached: int = 0  # tokens the slot held at insertion
    prompt_len: int = 0  # tokens inserted to read
    lane: int = 0  # the decode lane holding the slot (``laned.py``; 0 in process)

    @property
    def prefilling(self) -> bool:
        return self.generated == 0


class NumpyBatch:
    def __init__(self, weights: Weights, *, prefill_step_size: int = 256,
                 cache_dtype: mx.Dtype = mx.float32) -> None:
        self.weights = weights
        self.rope = RopeTable(weights)
        self.pool = KVPool(len(weights.layers), weights.n_kv_heads, weights.head_dim,
                           weights.key_order)
        self.prefill_step_size = max(1, prefill_step_size)
        self.cache_dtype = cache_dtype
        self._sequences: dict[int, _Sequence] = {}
        self._by_slot: dict[tuple[int, int], int] = {}  # (lane, slot) -> uid
        self._next_uid = 0

    def __len__(self) -> int:
        return len(self._sequences)

    def insert(self, prompts: list[list[int]], max_tokens: list[int],
               caches: Sequence[list[Any] | None] | None = None,
               all_tokens: list[list[int]] | None = None,
               samplers: Sequence[Callable[[mx.array], mx.array] | None] | None = None,
               logits_processors: list[list[Any]] | None = None) -> list[int]:
        uids = []
        for index, prompt in enumerate(prompts):
            if not prompt:
                raise ValueError("a sequence needs at least one token to feed")
            if max_tokens[index] <= 0:
                raise ValueError("max_tokens must be > 0")
            held = list(all_tokens[index]) if all_tokens else []
            lane, slot = self._place(caches[index] if caches else None, len(held))
            sampler = (samplers[index] if samplers else None) or greedy_sampler
            processors = list(logits_processors[index]) if logits_processors else []
            uid, self._next_uid = self._next_uid, self._next_uid + 1
            self._sequences[uid] = _Sequence(uid, slot, list(prompt), held, max_tokens[index],
                                             sampler, processors, cached=len(held),
                                             prompt_len=len(prompt), lane=lane)
            self._by_slot[lane, slot] = uid
            uids.append(uid)
        return uids

    def remove(self, uids: list[int], return_prompt_caches: bool = False
               ) -> dict[int, tuple[list[Any], list[int]]]:
        out = {}
        for uid in uids:
            seq = self._sequences.get(uid)
            if seq is None:
                continue
            if return_prompt_caches:
                out[uid] = (self._cache(seq), list(seq.fed))
            self._drop(seq)
        return out

    def _place(self, cache: list[Any] | None, expected: int) -> tuple[int, int]:
        """(lane, slot) for a new sequence, holding ``cache`` (of ``expected`` tokens)."""
        slot = self.pool.add(cache)
        if self.pool.lengths[slot] != expected:
            cached = self.pool.lengths[slot]
            self.pool.remove(slot)
            raise ValueError(f"{expected} tokens for a cache of {cached}")
        return 0, slot

    def _cache(self, seq: _Sequence) -> list[Any]:
        """A copy of the sequence's keys and values as mlx-lm caches (its ``fed`` tokens)."""
        return self.pool.to_mlx(seq.slot, self.cache_dtype)

    def _release(self, seq: _Sequence) -> int | None:
        """Free the sequence's slot; the slot (of its lane) whose sequence moved into it, if
        any."""
        if not self._sequences:
            self.pool = self.pool.emptied(KEEP_POOL_BYTES)
            return None
        return self.pool.remove(seq.slot)

    def _drop(self, seq: _Sequence) -> None:
        del self._sequences[seq.uid]
        del self._by_slot[seq.lane, seq.slot]
        moved = self._release(seq)
        if moved is not None:  # the last slot's sequence now lives in the freed one
            uid = self._by_slot.pop((seq.lane, moved))
            self._sequences[uid].slot = seq.slot
            self._by_slot[seq.lane, seq.slot] = uid

    def _plan(self, lane: int | None = None) -> list[tuple[_Sequence, int]]:
        """(sequence, tokens to feed) for this step (of ``lane``'s sequences, or all): every
        generating sequence's one token, then prompt chunks in arrival order up to the step's
        budget."""
        sequences = [s for s in self._sequences.values() if lane is None or s.lane == lane]
        plan = [(s, 1) for s in sequences if not s.prefilling]
        budget = self.prefill_step_size
        for seq in sequences:
            if budget <= 0:
                break
            if seq.prefilling:
                n = min(len(seq.pending), budget)
                plan.append((seq, n))
                budget -= n
        return plan

    def next(self) -> tuple[list[Progress], list[Response]]:
        plan = self._plan()
        if not plan:
            return [], []
        pieces = [Piece(seq.slot, seq.pending[:n]) for seq, n in plan]
        return self._take(plan, run_pieces(self.weights, self.rope, self.pool, pieces))

    def _take(self, plan: list[tuple[_Sequence, int]], logits: np.ndarray
              ) -> tuple[list[Progress], list[Response]]:
        """The step's outcome: each planned sequence advanced by what it fed, and a token
        drawn for those that have nothing left to feed."""
        done: list[tuple[_Sequence, np.ndarray]] = []
        read: list[Progress] = []
        for (seq, n), row in zip(plan, logits, strict=True):
            seq.fed.extend(seq.pending[:n])
            seq.pending = seq.pending[n:]
            if seq.prefilling:
                read.append(Progress(seq.uid, (len(seq.fed) - seq.cached, seq.prompt_len)))
            if not seq.pending:
                done.append((seq, row))
        # Sequences sampled in MLX (a sampler or processors) are evaluated together: one
        # synchronization per step, not one per sequence.
        drawn = {seq.uid: self._draw(seq, row) for seq, row in done
                 if not (seq.sampler is greedy_sampler and not seq.processors)}
        if drawn:
            mx.eval([tokens for tokens, _ in drawn.values()])
        responses = []
        for seq, row in done:
            if seq.uid in drawn:
                tokens, processed = drawn[seq.uid]
                token = cast(int, tokens.reshape(-1)[0].item())
                responses.append(self._respond(seq, token, row, processed[0]))
            else:
                responses.append(self._respond(seq, int(np.argmax(row)), row, None))
        return read, responses

    def _draw(self, seq: _Sequence, row: np.ndarray) -> tuple[mx.array, mx.array]:
        """The sequence's next token, lazily, through its processors and sampler (as a
        ``BatchGenerator`` does), with the log-probabilities it was drawn from."""
        logits = mx.array(row)[None]
        if seq.processors:
            context = mx.array(seq.fed)
            for processor in seq.processors:
                logits = processor(context, logits)
        processed = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
        return seq.sampler(processed), processed

    def _respond(self, seq: _Sequence, token: int, row: np.ndarray,
                 processed: mx.array | None) -> Response:
        seq.generated += 1
        seq.pending = [token]
        if seq.generated < seq.max_tokens:
            return Response(seq.uid, token, None, None, None, row, processed)
        cache = self._cache(seq)
        self._drop(seq)
        return Response(seq.uid, token, "length", cache, list(seq.fed), row, processed)


# Up to this many sequences decoding (no prompt read), attention row by row (``decode_few``):
# a `tiny` step of 2 / 3 / 4 rows took 0.18 / 0.23 / 0.25 ms against the batched attention's
# 0.21 / 0.25 / 0.25 (`benchmarks.numpy_step`), and served 1.16x / 1.21x the tokens per second at
# 2 / 3 streams (medians of 5 interleaved rounds); `bench` steps were unchanged.
FEW_ROWS = 3


def run_pieces(weights: Weights, rope: RopeTable, pool: KVPool, pieces: list[Piece]
               ) -> np.ndarray:
    """The logits of one step over ``pieces``: ``decode_one`` for a single stream's step,
    ``decode_few`` for up to ``FEW_ROWS`` streams decoding, else ``forward``."""
    if all(len(piece.tokens) == 1 for piece in pieces):
        if len(pieces) == 1:
            return decode_one(weights, rope, pool, pieces[0].slot, pieces[0].tokens[0])
        if len(pieces) <= FEW_ROWS:
            return decode_few(weights, rope, pool, [p.slot for p in pieces],
                              [p.tokens[0] for p in pieces])
    return forward(weights, rope, pool, pieces)
