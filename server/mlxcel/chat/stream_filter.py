"""The output parser every API family reads a generation through: generated text in, typed
pieces out (``generation.pieces``: answer text, reasoning text, tool-call starts, argument
fragments and ends), with no markup ever in the answer text.

State machine (one table, read it first)::

    state       looks for                      on match                     at finish
    CONTENT     reasoning open, tool start     → REASONING / TOOL           release held text
                (a channel header: dropped)
    REASONING   reasoning close                → CONTENT (strip leading \\n) all reasoning
    TOOL        format's end marker (if any)   parse block → CONTENT        parse what is there

Entering REASONING yields an empty ``ReasoningPiece`` first, so an empty block still opens.
A suffix of the buffer that could still become a marker is held back and released as text as
soon as it cannot. In CONTENT with tools active, trailing whitespace is held too: it is dropped
when a tool call follows, so streamed and non-streamed content agree. The end-of-block parse is
authoritative; a streamed call keeps its id and receives the arguments not yet sent.

In TOOL, text goes to a ``ToolBlock`` (``chat/tool_block.py``) instead of the buffer: the end
marker is looked for only in new text and the call streams through the format's incremental
``head_stream``, so a call of N tokens costs O(N) in all, not O(N) per token (issue 38).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum

from ..generation.holdback import earliest, held_suffix
from ..generation.pieces import (
    CallArguments,
    CallEnd,
    CallStart,
    ContentPiece,
    Piece,
    ReasoningPiece,
)
from .reasoning import ReasoningMarkers
from .tool_block import ToolBlock
from .tool_calls import ParsedToolCall, new_call_id
from .tool_formats.base import MalformedCall, ToolFormat, Tools
from .tool_formats.head_stream import HeadGrowth

log = logging.getLogger("mlxcel.chat")


class _State(Enum):
    CONTENT = "content"
    REASONING = "reasoning"
    TOOL = "tool"


class ChatOutputParser:
    """One generation's output, fed as it arrives (or all at once for a non-streamed answer)."""

    def __init__(
        self,
        *,
        tool_format: ToolFormat | None = None,
        tools: Tools | None = None,
        reasoning: ReasoningMarkers | None = None,
        starts_in_reasoning: bool = False,
        request_id: str = "",
        id_factory: Callable[[], str] = new_call_id,
    ) -> None:
        self._fmt = tool_format if tools else None
        self._tools = tools or []
        self._reasoning = reasoning
        self._state = _State.REASONING if starts_in_reasoning and reasoning else _State.CONTENT
        self._buf = ""
        self._strip_leading = self._state is _State.REASONING
        self._pending_ws = ""
        self._held_newlines = ""
        self._request_id = request_id
        self._new_id = id_factory
        self._block: ToolBlock | None = None  # the tool-call block being generated
        self._streamed: CallStart | None = None
        self._streamed_args: list[str] = []
        self._announced = False  # the open reasoning block has been announced
        self.calls: list[ParsedToolCall] = []
        self._content: list[str] = []
        self._reasoning_parts: list[str] | None = [] if self._state is _State.REASONING else None

    # -- results ------------------------------------------------------------------------------
    @property
    def content(self) -> str:
        return "".join(self._content)

    @property
    def reasoning(self) -> str | None:
        return None if self._reasoning_parts is None else "".join(self._reasoning_parts)

    @property
    def in_reasoning(self) -> bool:
        """Inside a reasoning block: what is fed now (its close marker included) is reasoning."""
        return self._state is _State.REASONING

    # -- feeding ------------------------------------------------------------------------------
    def feed(self, text: str) -> list[Piece]:
        out: list[Piece] = []
        if self._state is _State.TOOL:
            # a block's text goes straight to it, never through a growing buffer
            after = self._feed_block(out, text)
            if after is None:
                return out
            text = after
        self._buf += text
        while True:
            before = (self._state, len(self._buf))
            if self._state is _State.CONTENT:
                self._step_content(out, final=False)
            elif self._state is _State.REASONING:
                self._step_reasoning(out, final=False)
            else:
                self._step_tool(out, final=False)
            if (self._state, len(self._buf)) == before:
                return out

    def finish(self) -> list[Piece]:
        out = self.feed("")
        if self._state is _State.CONTENT:
            self._step_content(out, final=True)
        elif self._state is _State.REASONING:
            self._step_reasoning(out, final=True)
        else:
            self._step_tool(out, final=True)
        if self._pending_ws and not self.calls:
            self._emit_content(out, self._pending_ws)
        self._pending_ws = ""
        return out

    # -- CONTENT ------------------------------------------------------------------------------
    def _content_markers(self) -> list[str]:
        markers = []
        if self._reasoning is not None:
            markers.append(self._reasoning.open)
        if self._fmt is not None:
            markers.extend(self._fmt.starts)
        if self._reasoning is not None:
            markers.extend(self._reasoning.headers)
        return markers

    def _step_content(self, out: list[Piece], final: bool) -> None:
        markers = self._content_markers()
        hit = earliest(self._buf, markers)
        if hit is not None:
            at, marker = hit
            self._release_content(out, self._buf[:at])
            if self._reasoning is not None and marker in self._reasoning.headers:
                self._buf = self._buf[at + len(marker):]
                self._strip_leading = True
                return
            kept = self._fmt is not None and self._fmt.keep_start and marker in self._fmt.starts
            self._buf = self._buf[at if kept else at + len(marker):]
            if self._reasoning is not None and marker == self._reasoning.open:
                self._state = _State.REASONING
                if self._reasoning_parts is None:
                    self._reasoning_parts = []
            else:
                self._pending_ws = ""  # whitespace before a call is not content
                self._state = _State.TOOL
                self._block = ToolBlock(self._fmt, self._tools) if self._fmt else None
            self._strip_leading = True
            return
        keep = 0 if final else held_suffix(self._buf, markers)
        self._release_content(out, self._buf[: len(self._buf) - keep])
        self._buf = self._buf[len(self._buf) - keep:]

    def _release_content(self, out: list[Piece], text: str) -> None:
        if self._strip_leading:
            text = text.lstrip("\n")
            if not text:
                return
            self._strip_leading = False
        if self._fmt is None:
            self._emit_content(out, text)
            return
        text = self._pending_ws + text
        body = text.rstrip()
        self._pending_ws = text[len(body):]
        self._emit_content(out, body)

    def _emit_content(self, out: list[Piece], text: str) -> None:
        if text:
            self._content.append(text)
            out.append(ContentPiece(text))

    # -- REASONING ----------------------------------------------------------------------------
    def _step_reasoning(self, out: list[Piece], final: bool) -> None:
        assert self._reasoning is not None
        if not self._announced:
            out.append(ReasoningPiece(""))  # a block opens even if it stays empty
            self._announced = True
        close = self._reasoning.close
        at = self._buf.find(close)
        if at >= 0:
            self._release_reasoning(out, self._buf[:at], closing=True)
            self._buf = self._buf[at + len(close):]
            self._state = _State.CONTENT
            self._announced = False
            self._strip_leading = True
            return
        keep = 0 if final else held_suffix(self._buf, [close])
        self._release_reasoning(out, self._buf[: len(self._buf) - keep], closing=final)
        self._buf = self._buf[len(self._buf) - keep:]

    def _release_reasoning(self, out: list[Piece], text: str, closing: bool) -> None:
        if self._strip_leading:
            text = text.lstrip("\n")
            if not text and not closing:
                return
            self._strip_leading = False
        text = self._held_newlines + text
        body = text.rstrip("\n")
        self._held_newlines = "" if closing else text[len(body):]
        if body:
            assert self._reasoning_parts is not None
            self._reasoning_parts.append(body)
            out.append(ReasoningPiece(body))

    # -- TOOL ---------------------------------------------------------------------------------
    def _step_tool(self, out: list[Piece], final: bool) -> None:
        assert self._fmt is not None and self._block is not None
        if final:
            self._close_block(out, self._block.text(), complete=self._fmt.end is None)
            self._block = None
            return
        text, self._buf = self._buf, ""
        after = self._feed_block(out, text)
        if after is not None:
            self._buf = after

    def _feed_block(self, out: list[Piece], text: str) -> str | None:
        """Read ``text`` into the open block; once it ends, close it and return what follows."""
        block = self._block
        assert block is not None
        if not text:
            return None
        after = block.add(text)
        if after is None:
            self._stream(out, block.stream(text))
            return None
        assert block.body is not None
        self._close_block(out, block.body, complete=True)
        self._block = None
        self._state = _State.CONTENT
        self._strip_leading = True
        return after

    def _stream(self, out: list[Piece], growth: HeadGrowth | None) -> None:
        """Announce the call once its name is known and send its arguments as they grow."""
        if growth is None:
            return
        if self._streamed is None:
            self._streamed = CallStart(len(self.calls), self._new_id(), growth.name)
            self._streamed_args = []
            out.append(self._streamed)
        if growth.fragment:
            self._streamed_args.append(growth.fragment)
            out.append(CallArguments(self._streamed.index, growth.fragment))

    def _close_block(self, out: list[Piece], body: str, complete: bool) -> None:
        assert self._fmt is not None
        try:
            raws = self._fmt.parse_block(body, self._tools)
        except (MalformedCall, ValueError) as exc:
            level = logging.WARNING if complete else logging.INFO
            log.log(level, "request %s: a %s %s tool call: %s", self._request_id,
                    "malformed" if complete else "cut", self._fmt.name, exc)
            raws = []
        if not raws:
            self._keep_partial(out, body)
            return
        streamed, self._streamed = self._streamed, None
        for position, raw in enumerate(raws):
            index = len(self.calls)
            if position == 0 and streamed is not None:
                call = ParsedToolCall(streamed.id, streamed.name, raw.arguments)
                self._reconcile(out, streamed, raw.name, raw.arguments)
            else:
                call = ParsedToolCall(self._new_id(), raw.name, raw.arguments)
                out.append(CallStart(index, call.id, call.name))
                out.append(CallArguments(index, call.arguments))
            self.calls.append(call)
            out.append(CallEnd(index, call.arguments))

    def _keep_partial(self, out: list[Piece], body: str) -> None:
        """A block that does not parse (cut by the token limit, or malformed): the call its
        head names is kept with the arguments text written so far, the same whether it was
        streamed (announced piece by piece) or read whole, so both modes report it alike."""
        assert self._fmt is not None
        head = self._fmt.stream_head(body, self._tools)  # once, on the whole block
        if head is not None:
            sent = "".join(self._streamed_args)
            grown = head.arguments or ""
            fragment = grown[len(sent):] if grown.startswith(sent) else ""
            self._stream(out, HeadGrowth(head.name, fragment))
        streamed, self._streamed = self._streamed, None
        if streamed is not None:
            arguments = "".join(self._streamed_args)
            self.calls.append(ParsedToolCall(streamed.id, streamed.name, arguments))
            out.append(CallEnd(streamed.index, arguments))

    def _reconcile(self, out: list[Piece], streamed: CallStart, name: str, arguments: str) -> None:
        sent = "".join(self._streamed_args)
        if name != streamed.name or not arguments.startswith(sent):
            log.warning("request %s: streamed tool call %s disagrees with the final parse",
                        self._request_id, streamed.id)
            return
        if len(arguments) > len(sent):
            out.append(CallArguments(streamed.index, arguments[len(sent):]))
