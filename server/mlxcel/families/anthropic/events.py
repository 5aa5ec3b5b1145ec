"""The Anthropic Messages streaming protocol, server side, as a state machine (h11 style).

Design rules:

- ``TRANSITIONS`` below is the protocol; an event not allowed from the current state is a
  server bug (``RuntimeError``). ``error`` may end the stream from any open state.
- Content blocks are numbered 0, 1, 2 … in the order they start; one is open at a time.
- Every event goes out as ``event: <type>`` + ``data``: the Anthropic SDK drops events without
  an ``event:`` line.
- The encoder keeps the blocks it streamed, so the message the client assembles is known.
"""

from __future__ import annotations

import enum
from typing import Any

from .messages_wire import DIRECT_CALLER, tool_input


class State(enum.Enum):
    IDLE = "before message_start"
    MESSAGE = "between content blocks"
    BLOCK = "inside a content block"
    DELTA = "after message_delta"
    STOPPED = "after message_stop"
    ERRORED = "after error"


TRANSITIONS: dict[State, dict[str, State]] = {
    State.IDLE: {"message_start": State.MESSAGE, "error": State.ERRORED},
    State.MESSAGE: {
        "ping": State.MESSAGE,
        "content_block_start": State.BLOCK,
        "message_delta": State.DELTA,
        "error": State.ERRORED,
    },
    State.BLOCK: {
        "content_block_delta": State.BLOCK,
        "content_block_stop": State.MESSAGE,
        "error": State.ERRORED,
    },
    State.DELTA: {"message_stop": State.STOPPED, "error": State.ERRORED},
    State.STOPPED: {},
    State.ERRORED: {},
}

# Per block type: the delta type it takes and the delta field carrying the text.
DELTAS = {
    "text": ("text_delta", "text"),
    "thinking": ("thinking_delta", "thinking"),
    "tool_use": ("input_json_delta", "partial_json"),
}


def empty_block(kind: str, **fields: Any) -> dict[str, Any]:
    if kind == "text":
        return {"type": "text", "text": ""}
    if kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    return {"type": "tool_use", "id": fields["id"], "name": fields["name"], "input": {},
            "caller": DIRECT_CALLER}


class AnthropicEventEncoder:
    """Builds the events of one streamed message, in order."""

    def __init__(self) -> None:
        self.state = State.IDLE
        self.blocks: list[dict[str, Any]] = []
        self._pieces: list[str] = []

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        allowed = TRANSITIONS[self.state]
        if kind not in allowed:
            raise RuntimeError(f"Anthropic stream: {kind!r} is not allowed {self.state.value}")
        self.state = allowed[kind]
        return {"type": kind, **fields}

    def start(self, message: dict[str, Any]) -> dict[str, Any]:
        return self._event("message_start", message=message)

    def ping(self) -> dict[str, Any]:
        return self._event("ping")

    def open_block(self, block: dict[str, Any]) -> dict[str, Any]:
        self.blocks.append(dict(block))
        self._pieces = []
        return self._event("content_block_start", index=len(self.blocks) - 1,
                           content_block=block)

    @property
    def open_type(self) -> str | None:
        return self.blocks[-1]["type"] if self.state is State.BLOCK else None

    def delta(self, text: str) -> dict[str, Any]:
        kind, field = DELTAS[self.blocks[-1]["type"]]
        self._pieces.append(text)
        return self._event("content_block_delta", index=len(self.blocks) - 1,
                           delta={"type": kind, field: text})

    def close_block(self) -> dict[str, Any]:
        block = self.blocks[-1]
        joined = "".join(self._pieces)
        if block["type"] == "tool_use":
            block["input"] = tool_input(joined)  # {} for arguments cut short
        else:
            block[DELTAS[block["type"]][1]] = joined
        return self._event("content_block_stop", index=len(self.blocks) - 1)

    def finish(self, stop_reason: str, stop_sequence: str | None,
               usage: dict[str, Any]) -> list[dict[str, Any]]:
        # ``container``: Anthropic's MessageDeltaEvent delta carries it (null: no container).
        delta = self._event("message_delta",
                            delta={"stop_reason": stop_reason, "stop_sequence": stop_sequence,
                                   "container": None},
                            usage=usage)
        return [delta, self._event("message_stop")]

    def error(self, message: str, kind: str = "api_error") -> dict[str, Any]:
        return self._event("error", error={"type": kind, "message": message})
