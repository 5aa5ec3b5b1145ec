"""The typed pieces a generation's text is read into, the same for every API family: answer
text, reasoning text, and tool calls (a start, argument fragments, an end). A family encodes
these pieces into its own chunks or events and never looks at the model's markup."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ContentPiece:
    text: str


@dataclass(frozen=True)
class ReasoningPiece:
    text: str


@dataclass(frozen=True)
class CallStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True)
class CallArguments:
    index: int
    fragment: str


@dataclass(frozen=True)
class CallEnd:
    """The call at ``index`` is complete: ``arguments`` is its whole arguments text (the
    fragments sent for it joined, or more when the final parse found more)."""

    index: int
    arguments: str


Piece = ContentPiece | ReasoningPiece | CallStart | CallArguments | CallEnd
