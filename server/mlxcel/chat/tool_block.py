"""One tool-call block while it is generated: its text kept in pieces, its end marker looked for
only in the text not yet searched, and its call streamed through the format's ``HeadStream``,
so a block of N tokens costs O(N) in all (h11's ``_receivebuffer.py`` keeps how far it searched
the same way)."""

from __future__ import annotations

from .tool_formats.base import ToolFormat, Tools
from .tool_formats.head_stream import HeadGrowth


class ToolBlock:
    """The text after a block's opening; ``add`` says where its end marker is once it arrives."""

    def __init__(self, fmt: ToolFormat, tools: Tools) -> None:
        self._end = fmt.end
        self._head = fmt.head_stream(tools)
        self._parts: list[str] = []
        self._tail = ""  # the last characters read, for an end marker cut across pieces
        self.body: str | None = None  # the block's text once its end marker arrived

    def add(self, text: str) -> str | None:
        """Read ``text``. Once the end marker arrives: ``body`` is set and the text after the
        marker is returned (it belongs to what follows the block)."""
        if self._end:
            window = self._tail + text
            at = window.find(self._end)
            if at >= 0:
                whole = "".join(self._parts) + text
                cut = len(whole) - len(window) + at
                self.body = whole[:cut]
                return whole[cut + len(self._end):]
            keep = len(self._end) - 1
            self._tail = window[-keep:] if keep else ""
        self._parts.append(text)
        return None

    def stream(self, text: str) -> HeadGrowth | None:
        """What the call grew by with ``text`` (already ``add``-ed; the block still open)."""
        return self._head.feed(text)

    def text(self) -> str:
        """Everything read so far (for a block the generation ended inside)."""
        return "".join(self._parts)
