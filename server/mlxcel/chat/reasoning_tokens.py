"""How many generated tokens were reasoning, counted from the engine's token stream: each
``TokenDelta`` carries the ids of the tokens it releases, and the output parser says whether
the text it was fed belongs to a reasoning block. Counting the tokens themselves (not
re-tokenizing the reasoning text afterwards) gives the number the model generated, markers
included, as Anthropic's ``usage.output_tokens_details.thinking_tokens`` defines it ("including
the thinking-block delimiter tokens", its Messages API reference, "Usage") and OpenAI's
``completion_tokens_details.reasoning_tokens`` reports it.

A token whose text the engine holds back (a stop-string or UTF-8 prefix) is released with a
later token's delta and counted with that delta's side: at most a few tokens at a block's edge.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..generation import TokenDelta
from ..generation.pieces import Piece
from .stream_filter import ChatOutputParser


class ReasoningTokenCount:
    """A parser fed delta by delta, counting the tokens that fell in a reasoning block."""

    def __init__(self, parser: ChatOutputParser) -> None:
        self.parser = parser
        self.tokens = 0

    def feed(self, delta: TokenDelta) -> list[Piece]:
        """The parser's pieces for ``delta``; its tokens count as reasoning when the parser
        was in a reasoning block before the text (it closes the block) or is after it (it
        opened or continued one)."""
        before = self.parser.in_reasoning
        pieces = self.parser.feed(delta.text)
        if before or self.parser.in_reasoning:
            self.tokens += len(delta.token_ids)
        return pieces


def thinking_tokens(parser: ChatOutputParser, deltas: Iterable[TokenDelta]) -> int:
    """The reasoning tokens of a finished generation's deltas, read with a fresh parser."""
    counter = ReasoningTokenCount(parser)
    for delta in deltas:
        counter.feed(delta)
    return counter.tokens
