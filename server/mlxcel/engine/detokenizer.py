"""Streaming detokenization that never splits a multi-byte character across chunks.

Decodes a sliding window of recent tokens and releases only text that no longer ends in an
incomplete UTF-8 sequence (U+FFFD from the decoder), the offsets approach used by TGI and vLLM.
"""

from __future__ import annotations

from typing import Protocol


class Decoder(Protocol):
    def decode(self, token_ids: list[int]) -> str: ...


class IncrementalDetokenizer:
    def __init__(self, decoder: Decoder) -> None:
        self._decoder = decoder
        self._tokens: list[int] = []
        self._prefix_offset = 0
        self._read_offset = 0

    def add(self, token_id: int) -> str:
        """Add one token; return the newly complete text (possibly empty)."""
        self._tokens.append(token_id)
        prefix = self._decoder.decode(self._tokens[self._prefix_offset : self._read_offset])
        full = self._decoder.decode(self._tokens[self._prefix_offset :])
        if full.endswith("\ufffd") or len(full) <= len(prefix):
            return ""
        new = full[len(prefix) :]
        self._prefix_offset = self._read_offset
        self._read_offset = len(self._tokens)
        return new

    def flush(self) -> str:
        """Text still pending at the end (an incomplete character is released as U+FFFD)."""
        prefix = self._decoder.decode(self._tokens[self._prefix_offset : self._read_offset])
        full = self._decoder.decode(self._tokens[self._prefix_offset :])
        self._prefix_offset = self._read_offset = len(self._tokens)
        return full[len(prefix) :] if len(full) > len(prefix) else ""
