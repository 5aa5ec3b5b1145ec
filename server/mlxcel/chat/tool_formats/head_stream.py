"""A tool call streamed while it is generated, read incrementally: each piece of the block is
read once, so a call of N tokens costs O(N) in all, not O(N) per token.

A ``HeadStream`` is fed the block's text piece by piece and says what the call has grown by: its
name once known and the arguments text added since the last piece. What it reports after each
piece is exactly what the format's whole-body ``ToolFormat.stream_head`` would give on the
block so far (the parser announces the name once and sends each arguments prefix's new part);
``server/tests/test_head_stream.py`` checks that on every prefix of every format's calls.

- ``NoHeadStream``: formats whose calls are sent whole when the block ends.
- ``WholeBodyHeadStream``: any format with only ``stream_head`` (re-reads the block each piece).
- ``JsonHeadStream``: an opening matched by ``head_match`` then a JSON object or array as the
  arguments (Hermes, Llama 3, Mistral, generic JSON).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .head_match import HeadMatcher, HeadPattern

if TYPE_CHECKING:
    from .base import ToolFormat, Tools


@dataclass(frozen=True)
class HeadGrowth:
    """The call's name, and the arguments text added by the last piece ("" for none)."""

    name: str
    fragment: str


class HeadStream:
    """Reads one block piece by piece. The base class streams nothing."""

    def feed(self, text: str) -> HeadGrowth | None:
        """Read the next piece; None while the call cannot be announced."""
        return None


class NoHeadStream(HeadStream):
    """A format whose calls are only parsed when the block is complete."""


class WholeBodyHeadStream(HeadStream):
    """A format that only defines ``stream_head``: the block is re-read on every piece."""

    def __init__(self, fmt: ToolFormat, tools: Tools) -> None:
        self._fmt = fmt
        self._tools = tools
        self._parts: list[str] = []
        self._sent = ""

    def feed(self, text: str) -> HeadGrowth | None:
        self._parts.append(text)
        head = self._fmt.stream_head("".join(self._parts), self._tools)
        if head is None:
            return None
        fragment = ""
        if head.arguments is not None and head.arguments.startswith(self._sent):
            fragment = head.arguments[len(self._sent):]
            self._sent = head.arguments if fragment else self._sent
        return HeadGrowth(head.name, fragment)


_OUTSIDE_STRING = re.compile(r'["{}\[\]]')
_INSIDE_STRING = re.compile(r'["\\]')


class JsonValueScan:
    """``base.json_value_prefix`` incrementally: where one JSON object or array (opened by the
    first character fed) closes, found by jumping between the characters that matter."""

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self.complete = False

    def feed(self, text: str) -> int:
        """How many characters of ``text`` belong to the value (all of them until it closes)."""
        i, n = 0, len(text)
        while i < n and not self.complete:
            if self._escaped:
                self._escaped = False
                i += 1
                continue
            pattern = _INSIDE_STRING if self._in_string else _OUTSIDE_STRING
            found = pattern.search(text, i)
            if found is None:
                return n
            i = found.start()
            ch = text[i]
            if ch == "\\":
                self._escaped = True
            elif ch == '"':
                self._in_string = not self._in_string
            elif ch in "{[":
                self._depth += 1
            else:
                self._depth -= 1
                self.complete = self._depth == 0
            i += 1
        return i


class JsonHeadStream(HeadStream):
    """An opening (``head``, whose last capture is the name), then the arguments: characters in
    ``skip`` are passed over, and a value opened by one of ``opens`` streams until it closes
    (any other character: the arguments are sent whole at the end).

    ``abandon``: a text that, once anywhere in the block, stops the streaming (a second call).
    ``hold_space``: trailing whitespace of an unfinished value waits for what follows (for a
    format whose ``stream_head`` strips the block).
    """

    def __init__(self, head: HeadPattern, *, skip: str = "", opens: str = "{",
                 abandon: str | None = None, hold_space: bool = False) -> None:
        self._head = HeadMatcher(head)
        self._skip = skip
        self._opens = opens
        self._abandon = abandon
        self._abandon_tail = ""
        self._hold_space = hold_space
        self._held = ""
        self._name: str | None = None
        self._value: JsonValueScan | None = None
        self._stopped = False  # the arguments will not stream
        self._gone = False  # ``abandon`` was seen

    def feed(self, text: str) -> HeadGrowth | None:
        if self._gone or self._abandoned(text):
            return None
        if self._name is None:
            at = self._head.feed(text)
            if at is None:
                return None
            self._name = self._head.captures[-1]
            text = text[at:]
        return HeadGrowth(self._name, self._arguments(text))

    def _abandoned(self, text: str) -> bool:
        if self._abandon is None:
            return False
        window = self._abandon_tail + text
        if self._abandon in window:
            self._gone = True
            return True
        keep = len(self._abandon) - 1
        self._abandon_tail = window[-keep:] if keep else ""
        return False

    def _arguments(self, text: str) -> str:
        if self._stopped or (self._value is not None and self._value.complete):
            return ""
        if self._value is None:
            start = 0
            while start < len(text) and self._skipped(text[start]):
                start += 1
            if start == len(text):
                return ""
            if text[start] not in self._opens:
                self._stopped = True
                return ""
            self._value = JsonValueScan()
            text = text[start:]
        taken = text[: self._value.feed(text)]
        if not self._hold_space:
            return taken
        taken = self._held + taken
        if self._value.complete:
            self._held = ""
            return taken
        body = taken.rstrip()
        self._held = taken[len(body):]
        return body

    def _skipped(self, ch: str) -> bool:
        return ch in self._skip if self._skip else ch.isspace()
