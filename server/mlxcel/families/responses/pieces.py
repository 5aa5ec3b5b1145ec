"""The Responses family's encoder for the output parser's pieces: reasoning as a reasoning
item, text as a message item, and each tool call as a function_call item whose
``response.function_call_arguments.delta`` events carry the arguments as they are generated.
One item is open at a time; a call cut by the token limit ends ``incomplete``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Literal

from ...chat.output import whole_object
from ...generation.pieces import (
    CallArguments,
    CallEnd,
    CallStart,
    ContentPiece,
    Piece,
    ReasoningPiece,
)
from .events import ResponsesEventEncoder
from .responses_wire import new_id

Section = Literal["reasoning", "content", "call"]
PART_OF = {"reasoning": "reasoning_text", "content": "output_text"}


def _item_for(kind: Section) -> dict[str, Any]:
    if kind == "reasoning":
        return {"id": new_id("rs"), "type": "reasoning", "summary": [], "content": []}
    return {"id": new_id("msg"), "type": "message", "status": "in_progress",
            "role": "assistant", "content": []}


class ResponsesPieceEncoder:
    """Pieces in, events out, on top of the protocol's state machine."""

    def __init__(self, encoder: ResponsesEventEncoder) -> None:
        self.enc = encoder
        self.kind: Section | None = None
        self.wrote_message = False
        self.complete_calls = 0

    def pieces(self, pieces: Iterable[Piece]) -> Iterator[dict[str, Any]]:
        for piece in pieces:
            yield from self._piece(piece)

    def _piece(self, piece: Piece) -> Iterator[dict[str, Any]]:
        if isinstance(piece, ReasoningPiece):
            yield from self._text("reasoning", piece.text)
        elif isinstance(piece, ContentPiece):
            yield from self._text("content", piece.text)
        elif isinstance(piece, CallStart):
            yield from self.close()
            self.kind = "call"
            yield self.enc.add_item({"id": new_id("fc"), "type": "function_call",
                                     "status": "in_progress", "arguments": "",
                                     "call_id": piece.id, "name": piece.name})
        elif isinstance(piece, CallArguments):
            yield self.enc.arguments_delta(piece.fragment)
        elif isinstance(piece, CallEnd):
            yield from self.close()

    def _text(self, kind: Section, text: str) -> Iterator[dict[str, Any]]:
        if kind != self.kind:
            yield from self.close()
            self.kind = kind
            self.wrote_message |= kind == "content"
            yield self.enc.add_item(_item_for(kind))
            yield self.enc.open_part(PART_OF[kind])
        if text:
            yield self.enc.text_delta(PART_OF[kind], text)

    def close(self, status: str = "completed") -> Iterator[dict[str, Any]]:
        if self.kind == "call":  # a call's item ends complete only with whole-object arguments
            whole = whole_object(self.enc.output[-1]["arguments"])
            self.complete_calls += whole
            yield self.enc.arguments_done()
            yield self.enc.close_item("completed" if whole else "incomplete")
        elif self.kind is not None:
            yield from self.enc.close_part(PART_OF[self.kind])
            yield self.enc.close_item(status if self.kind == "content" else "completed")
        self.kind = None

    def finish(self, status: str) -> Iterator[dict[str, Any]]:
        """Close the last item; a response without text or calls still has a message."""
        if not self.wrote_message and not self.complete_calls:
            yield from self._text("content", "")
        yield from self.close(status)
