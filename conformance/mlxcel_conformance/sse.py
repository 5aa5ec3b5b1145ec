"""Server-sent events parsing, per the WHATWG HTML "event stream" interpretation rules.

Owns: turning text (whole, or streamed chunk by chunk) into `SSEEvent`s exactly as a browser's
EventSource or the official SDKs would, while keeping what a conformance check needs to see and
a client would silently drop:

- `SSEEvent.event` is `None` when the block had no `event:` line (the spec folds that into
  "message"; the Anthropic SDK drops such events, so the difference matters);
- `SSEEvent.id` is the `id:` value carried by *this* block, not the sticky last-event-id;
- `raw` keeps the block's field lines with their original line endings;
- blocks that dispatch nothing (no `data:` line) are kept in `discarded`;
- text after the last blank line is `trailing_incomplete` (the spec discards it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

_BOM = "\ufeff"
_LINE_BREAK = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event."""

    event: str | None
    data: str
    id: str | None = None
    retry: int | None = None
    raw: str = ""


@dataclass(frozen=True)
class SSEStream:
    """A whole parsed stream."""

    events: tuple[SSEEvent, ...]
    trailing_incomplete: str = ""
    comments: tuple[str, ...] = ()
    discarded: tuple[str, ...] = ()


@dataclass
class _Block:
    """Field buffers of the event being assembled."""

    raw: list[str] = field(default_factory=list)
    data: list[str] = field(default_factory=list)
    event: str | None = None
    id: str | None = None
    retry: int | None = None
    has_fields: bool = False  # any non-comment line seen

    def text(self) -> str:
        return "".join(self.raw)


class SSEParser:
    """Incremental parser: `feed()` text chunks as they arrive, then `close()`.

    A chunk may end anywhere, including between the `\\r` and `\\n` of a CRLF; events are
    returned as soon as their terminating blank line has been seen.
    """

    def __init__(self) -> None:
        self._partial = ""  # a line whose terminator has not arrived yet
        self._skip_lf = False  # the previous chunk ended on "\r": a leading "\n" belongs to it
        self._last_line_blank = False
        self._started = False
        self._closed = False
        self._block = _Block()
        self.comments: list[str] = []
        self.discarded: list[str] = []
        self.last_event_id = ""
        self.trailing_incomplete = ""

    def feed(self, chunk: str) -> list[SSEEvent]:
        if self._closed:
            raise ValueError("feed() after close()")
        if not chunk:
            return []
        if not self._started:
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[1:]
        if self._skip_lf:
            self._skip_lf = False
            if chunk.startswith("\n"):
                chunk = chunk[1:]
                # the "\n" completes a CRLF whose "\r" ended a field line of the open block
                if not self._last_line_blank:
                    self._block.raw.append("\n")
        events: list[SSEEvent] = []
        text = self._partial + chunk
        start = 0
        while (match := _LINE_BREAK.search(text, start)) is not None:
            if match.group() == "\r" and match.end() == len(text):
                self._skip_lf = True  # a "\n" may follow in the next chunk
            event = self._process_line(text[start : match.start()], text[start : match.end()])
            if event is not None:
                events.append(event)
            start = match.end()
        self._partial = text[start:]
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: an unterminated block is not dispatched, only recorded."""
        if self._closed:
            return []
        self._closed = True
        pending = self._block.text() + self._partial
        if self._block.has_fields or (self._partial and not self._partial.startswith(":")):
            self.trailing_incomplete = pending
        elif self._partial:
            self.comments.append(self._partial[1:].removeprefix(" "))
        self._partial = ""
        self._block = _Block()
        return []

    def stream(self, events: Iterable[SSEEvent]) -> SSEStream:
        return SSEStream(
            events=tuple(events),
            trailing_incomplete=self.trailing_incomplete,
            comments=tuple(self.comments),
            discarded=tuple(self.discarded),
        )

    def _process_line(self, line: str, raw: str) -> SSEEvent | None:
        self._last_line_blank = line == ""
        if line == "":
            return self._dispatch()
        self._block.raw.append(raw)
        if line.startswith(":"):
            self.comments.append(line[1:].removeprefix(" "))
            return None
        self._block.has_fields = True
        name, sep, value = line.partition(":")
        if sep:
            value = value.removeprefix(" ")
        if name == "event":
            self._block.event = value
        elif name == "data":
            self._block.data.append(value)
        elif name == "id":
            if "\0" not in value:  # the spec ignores ids containing NULL
                self._block.id = value
                self.last_event_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                self._block.retry = int(value)
        # any other field name is ignored, as the spec says; it stays visible in `raw`
        return None

    def _dispatch(self) -> SSEEvent | None:
        block, self._block = self._block, _Block()
        if not block.data:
            if block.has_fields:
                self.discarded.append(block.text())
            return None
        return SSEEvent(
            event=block.event,
            data="\n".join(block.data),
            id=block.id,
            retry=block.retry,
            raw=block.text(),
        )


def parse_sse(text: str) -> SSEStream:
    """Parse a complete stream body."""
    parser = SSEParser()
    events = parser.feed(text)
    events += parser.close()
    return parser.stream(events)


def iter_sse(chunks: Iterable[str]) -> Iterator[SSEEvent]:
    """Yield events from text chunks, e.g. `httpx.Response.iter_text()`."""
    parser = SSEParser()
    for chunk in chunks:
        yield from parser.feed(chunk)
    yield from parser.close()
