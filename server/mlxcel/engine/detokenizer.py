"""Streaming detokenization that never splits a multi-byte character across chunks.

Decodes a short window of recent tokens and releases only text that no longer ends in an
incomplete UTF-8 sequence (U+FFFD from the decoder): the offsets approach of TGI and vLLM, with
one decode per token instead of two. The window's released part was itself the whole window one
token earlier, so its text is kept rather than decoded again; the window is moved up (to start
at the last released piece, which keeps the context a tokenizer needs to place a word's leading
space) once it holds ``WINDOW`` tokens, and only then is its released part decoded anew. The
cost per token is therefore flat in the generation's length (``python -m
benchmarks.detok_stream``).
"""

from __future__ import annotations

from typing import Protocol

WINDOW = 4  # tokens decoded together at most, held ones aside: a decode costs ~0.5 us a token


class Decoder(Protocol):
    def decode(self, token_ids: list[int]) -> str: ...


class IncrementalDetokenizer:
    def __init__(self, decoder: Decoder) -> None:
        self._decoder = decoder
        self._tokens: list[int] = []
        self._prefix_offset = 0
        self._read_offset = 0
        # the decode of tokens[prefix_offset:read_offset] (None: not known yet)
        self._prefix_text: str | None = ""

    def add(self, token_id: int) -> str:
        """Add one token; return the newly complete text (possibly empty)."""
        self._tokens.append(token_id)
        prefix = self._prefix()
        full = self._decoder.decode(self._tokens[self._prefix_offset:])
        if full.endswith("\ufffd") or len(full) <= len(prefix):
            return ""
        new = full[len(prefix):]
        if len(self._tokens) - self._prefix_offset >= WINDOW:
            self._prefix_offset, self._prefix_text = self._read_offset, None
        else:
            self._prefix_text = full
        self._read_offset = len(self._tokens)
        return new

    def flush(self) -> str:
        """Text still pending at the end (an incomplete character is released as U+FFFD)."""
        prefix = self._prefix()
        full = self._decoder.decode(self._tokens[self._prefix_offset:])
        self._prefix_offset = self._read_offset = len(self._tokens)
        self._prefix_text = ""
        return full[len(prefix):] if len(full) > len(prefix) else ""

    def _prefix(self) -> str:
        if self._prefix_text is None:
            self._prefix_text = self._decoder.decode(
                self._tokens[self._prefix_offset:self._read_offset])
        return self._prefix_text
