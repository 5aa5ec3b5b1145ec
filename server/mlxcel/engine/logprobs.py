"""Turning the engine's log-probability vectors into OpenAI-shaped token logprobs, a whole
batch step's at once."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, cast

import mlx.core as mx
import numpy as np

from ..generation import GenerationRequest, TokenLogprob, TopLogprob
from ..generation.alternatives import LOGPROB_FLOOR, TopAlternatives, clamp_logprobs
from .sampling import post_sampling_logprobs


@lru_cache(maxsize=1)
def _byte_level_decoder() -> dict[str, int]:
    """GPT-2's printable-unicode alphabet for raw bytes, inverted (char -> byte)."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    codes = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, codes, strict=True)}


class LogprobRenderer:
    """Renders the sampled token and the top alternatives from a log-softmax vector."""

    def __init__(self, tokenizer: Any) -> None:
        self._tokenizer = tokenizer
        self._cache: dict[int, tuple[str, tuple[int, ...]]] = {}

    def render(self, logprobs: mx.array, token_id: int, top_n: int) -> TokenLogprob:
        return self.render_batch([logprobs], [token_id], [top_n])[0]

    def render_batch(self, rows: list[mx.array], token_ids: list[int],
                     top_ns: list[int]) -> list[TokenLogprob]:
        """The logprobs of every sequence of one step that asked for them, with one
        evaluation and one transfer to the host for all of them: the sampled token's value
        and each row's ``top_n`` best, rows of the same ``top_n`` partitioned together."""
        if not rows:
            return []
        values = mx.stack([row.reshape(-1) for row in rows]).astype(mx.float32)
        chosen = values[mx.arange(len(rows)), mx.array(token_ids)]
        groups: dict[int, list[int]] = {}
        for i, top_n in enumerate(top_ns):
            if top_n > 0:
                groups.setdefault(top_n, []).append(i)
        parts: dict[int, tuple[mx.array, mx.array]] = {}
        for top_n, members in groups.items():
            group = values[mx.array(members)]
            idx = mx.argpartition(-group, kth=top_n - 1, axis=-1)[:, :top_n]
            parts[top_n] = (idx, mx.take_along_axis(group, idx, axis=-1))
        mx.eval(chosen, *(a for pair in parts.values() for a in pair))
        tops: list[TopAlternatives | tuple[()]] = [()] * len(rows)
        for top_n, (idx, lps) in parts.items():
            id_rows, value_rows = np.array(idx), np.array(lps)
            for row, i in enumerate(groups[top_n]):
                # best first; ties keep argpartition's order (a stable sort, as before)
                order = np.argsort(-value_rows[row], kind="stable")
                tops[i] = TopAlternatives(id_rows[row][order],
                                          clamp_logprobs(value_rows[row][order]), self._piece)
        out = []
        chosen_values = cast(list[float], chosen.tolist())
        for token_id, value, top in zip(token_ids, chosen_values, tops, strict=True):
            picked = self._top(token_id, value)
            out.append(TokenLogprob(token_id=token_id, token=picked.token,
                                    logprob=picked.logprob, bytes=picked.bytes, top=top))
        return out

    def _top(self, token_id: int, logprob: float) -> TopLogprob:
        text, raw = self._piece(token_id)
        value = min(logprob, 0.0) if logprob >= LOGPROB_FLOOR else LOGPROB_FLOOR
        return TopLogprob(token=text, logprob=value, bytes=raw, token_id=token_id)

    def _piece(self, token_id: int) -> tuple[str, tuple[int, ...]]:
        cached = self._cache.get(token_id)
        if cached is None:
            cached = self._cache[token_id] = self._compute_piece(token_id)
        return cached

    def _compute_piece(self, token_id: int) -> tuple[str, tuple[int, ...]]:
        piece = self._tokenizer.convert_ids_to_tokens(token_id)
        table = _byte_level_decoder()
        if isinstance(piece, str) and piece and all(ch in table for ch in piece):
            raw = bytes(table[ch] for ch in piece)
        else:
            raw = self._tokenizer.decode([token_id]).encode("utf-8")
        special = token_id in getattr(self._tokenizer, "all_special_ids", ())
        if special and isinstance(piece, str):
            raw = piece.encode("utf-8")
        return raw.decode("utf-8", errors="replace"), tuple(raw)


def logprob_row(request: GenerationRequest, response: Any) -> mx.array:
    """The vector a sampled token's logprobs are read from: mlx-lm's log-softmax, or the
    sampler's own distribution when the request asked for post-sampling probabilities."""
    return post_sampling_logprobs(response.logprobs, request.sampling) \
        if request.post_sampling_probs else response.logprobs


def render_step(renderer: LogprobRenderer | None,
                step: list[tuple[GenerationRequest, Any]]) -> list[TokenLogprob | None]:
    """The logprobs of every sequence of a batch step (its request and its response) that
    asked for them, rendered together (one host transfer for the step, not three per
    sequence); None for the others."""
    out: list[TokenLogprob | None] = [None] * len(step)
    wanted = [i for i, (request, _) in enumerate(step) if request.logprobs]
    if not wanted or renderer is None:
        return out
    rows = [logprob_row(*step[i]) for i in wanted]
    tokens = [int(step[i][1].token) for i in wanted]
    top_ns = [step[i][0].top_logprobs for i in wanted]
    for i, rendered in zip(wanted, renderer.render_batch(rows, tokens, top_ns), strict=True):
        out[i] = rendered
    return out
