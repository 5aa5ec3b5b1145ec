"""Turning the engine's log-probability vector into OpenAI-shaped token logprobs."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import mlx.core as mx

from ..generation import TokenLogprob, TopLogprob


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
        values = logprobs.astype(mx.float32)
        top: tuple[TopLogprob, ...] = ()
        if top_n > 0:
            idx = mx.argpartition(-values, kth=top_n - 1)[:top_n]
            ids: list[int] = idx.tolist()  # type: ignore[assignment]
            lps: list[float] = values[idx].tolist()  # type: ignore[assignment]
            pairs = sorted(zip(ids, lps, strict=True), key=lambda p: -p[1])
            top = tuple(self._top(i, v) for i, v in pairs)
        chosen = self._top(token_id, float(values[token_id].item()))  # type: ignore[arg-type]
        return TokenLogprob(
            token_id=token_id,
            token=chosen.token,
            logprob=chosen.logprob,
            bytes=chosen.bytes,
            top=top,
        )

    def _top(self, token_id: int, logprob: float) -> TopLogprob:
        text, raw = self._piece(token_id)
        # OpenAI's floor for an impossible token; NaN (logits made infinite by a penalty such
        # as repetition_penalty 5e-324) and -inf both land there: JSON has neither.
        value = min(logprob, 0.0) if logprob >= -9999.0 else -9999.0
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
