"""The Anthropic family's encoder for the output parser's pieces: reasoning as a thinking
block (when thinking was asked for, else left out), text as a text block, and each tool call as
a tool_use block whose ``input_json_delta`` events carry the arguments as they are generated
(the first one empty, as Anthropic's own streams do)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ...chat.output import whole_object
from ...generation.pieces import (
    CallArguments,
    CallEnd,
    CallStart,
    ContentPiece,
    Piece,
    ReasoningPiece,
)
from .events import AnthropicEventEncoder, empty_block


class AnthropicPieceEncoder:
    """Pieces in, events out, on top of the protocol's state machine."""

    def __init__(self, encoder: AnthropicEventEncoder, with_thinking: bool) -> None:
        self.enc = encoder
        self.with_thinking = with_thinking
        self.wrote_text = False
        self.complete_calls = 0  # calls whose arguments are a whole object

    def pieces(self, pieces: Iterable[Piece]) -> Iterator[dict[str, Any]]:
        for piece in pieces:
            yield from self._piece(piece)

    def _piece(self, piece: Piece) -> Iterator[dict[str, Any]]:
        if isinstance(piece, ReasoningPiece):
            if self.with_thinking:
                yield from self._text_block("thinking", piece.text)
        elif isinstance(piece, ContentPiece):
            yield from self._text_block("text", piece.text)
        elif isinstance(piece, CallStart):
            yield from self.close()
            yield self.enc.open_block(empty_block("tool_use", id=piece.id, name=piece.name))
            yield self.enc.delta("")
        elif isinstance(piece, CallArguments):
            yield self.enc.delta(piece.fragment)
        elif isinstance(piece, CallEnd):
            self.complete_calls += whole_object(piece.arguments)
            yield from self.close()

    def _text_block(self, block: str, text: str) -> Iterator[dict[str, Any]]:
        if self.enc.open_type != block:
            yield from self.close()
            self.wrote_text |= block == "text"
            yield self.enc.open_block(empty_block(block))
        if text:
            yield self.enc.delta(text)

    def close(self) -> Iterator[dict[str, Any]]:
        if self.enc.open_type is not None:
            yield self.enc.close_block()

    def finish(self) -> Iterator[dict[str, Any]]:
        """Close the last block; a message without text or calls still has a text block."""
        if not self.wrote_text and not self.complete_calls:
            yield from self._text_block("text", "")
        yield from self.close()
