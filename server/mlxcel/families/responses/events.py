"""The Responses streaming protocol, server side, as a state machine (h11 style).

Design rules:

- ``TRANSITIONS`` below is the protocol: every event the encoder sends must be allowed from
  the current state, else it is a server bug (``RuntimeError``), never a malformed stream.
- One output item is open at a time; items are numbered by ``output_index`` in the order they
  are added, and the terminal ``response`` lists exactly those items.
- ``sequence_number`` starts at 0 and grows by one per event; ``event:`` equals ``type``.
- ``usage`` appears only on the terminal response; text events carry ``logprobs: []``.
"""

from __future__ import annotations

import enum
from typing import Any


class State(enum.Enum):
    IDLE = "idle"
    CREATED = "created"
    IN_PROGRESS = "in progress"
    COMPACTING = "compacting"
    ITEM = "item open"
    PART = "content part open"
    PART_DONE = "content part text done"
    ARGS_DONE = "arguments done"
    ERRORED = "errored"
    CLOSED = "closed"


TRANSITIONS: dict[State, dict[str, State]] = {
    State.IDLE: {"response.created": State.CREATED},
    State.CREATED: {"response.queued": State.CREATED,  # a background response, first queued
                    "response.in_progress": State.IN_PROGRESS, "error": State.ERRORED},
    State.IN_PROGRESS: {
        "mlx.compaction.started": State.COMPACTING,
        "response.output_item.added": State.ITEM,
        "response.completed": State.CLOSED,
        "response.incomplete": State.CLOSED,
        "error": State.ERRORED,
    },
    State.COMPACTING: {"mlx.compaction.completed": State.IN_PROGRESS, "error": State.ERRORED},
    State.ITEM: {
        "response.content_part.added": State.PART,
        "response.function_call_arguments.delta": State.ITEM,
        "response.function_call_arguments.done": State.ARGS_DONE,
        "response.output_item.done": State.IN_PROGRESS,
        "error": State.ERRORED,
    },
    State.PART: {
        "response.output_text.delta": State.PART,
        "response.reasoning_text.delta": State.PART,
        "response.output_text.done": State.PART_DONE,
        "response.reasoning_text.done": State.PART_DONE,
        "error": State.ERRORED,
    },
    State.PART_DONE: {"response.content_part.done": State.ITEM},
    State.ARGS_DONE: {"response.output_item.done": State.IN_PROGRESS},
    State.ERRORED: {"response.failed": State.CLOSED},
    State.CLOSED: {},
}

# The delta/done event pair and the part type of each kind of text part.
TEXT_EVENTS = {
    "output_text": ("response.output_text.delta", "response.output_text.done"),
    "reasoning_text": ("response.reasoning_text.delta", "response.reasoning_text.done"),
}


def _snapshot(item: dict[str, Any]) -> dict[str, Any]:
    # Items keep changing after an event names them; the event carries them as they were.
    return {k: list(v) if isinstance(v, list) else v for k, v in item.items()}


class ResponsesEventEncoder:
    """Builds the events of one streamed response, in order, and the output they describe."""

    def __init__(self) -> None:
        self.state = State.IDLE
        self.sequence = 0
        self.output: list[dict[str, Any]] = []
        self._text: list[str] = []

    def _event(self, kind: str, **fields: Any) -> dict[str, Any]:
        allowed = TRANSITIONS[self.state]
        if kind not in allowed:
            raise RuntimeError(f"Responses stream: {kind!r} is not allowed while {self.state}")
        self.state = allowed[kind]
        payload = {"type": kind, **fields, "sequence_number": self.sequence}
        self.sequence += 1
        return payload

    @property
    def open_item(self) -> dict[str, Any] | None:
        return self.output[-1] if self.state in (State.ITEM, State.PART) else None

    def response_event(self, kind: str, response: dict[str, Any]) -> dict[str, Any]:
        return self._event(kind, response=response)

    def custom(self, kind: str, **fields: Any) -> dict[str, Any]:
        return self._event(kind, **fields)

    def add_item(self, item: dict[str, Any]) -> dict[str, Any]:
        self.output.append(item)
        return self._event("response.output_item.added", output_index=len(self.output) - 1,
                           item=_snapshot(item))

    def _where(self) -> dict[str, Any]:
        return {"item_id": self.output[-1]["id"], "output_index": len(self.output) - 1}

    def open_part(self, part_type: str) -> dict[str, Any]:
        part: dict[str, Any] = {"type": part_type, "text": ""}
        if part_type == "output_text":
            part.update(annotations=[], logprobs=[])
        self._text = []
        return self._event("response.content_part.added", **self._where(),
                           content_index=0, part=part)

    def text_delta(self, part_type: str, delta: str) -> dict[str, Any]:
        self._text.append(delta)
        extra: dict[str, Any] = {"logprobs": []} if part_type == "output_text" else {}
        return self._event(TEXT_EVENTS[part_type][0], **self._where(), content_index=0,
                           delta=delta, **extra)

    def close_part(self, part_type: str) -> list[dict[str, Any]]:
        text = "".join(self._text)
        extra: dict[str, Any] = {"logprobs": []} if part_type == "output_text" else {}
        done = self._event(TEXT_EVENTS[part_type][1], **self._where(), content_index=0,
                           text=text, **extra)
        part: dict[str, Any] = {"type": part_type, "text": text}
        if part_type == "output_text":
            part.update(annotations=[], logprobs=[])
        self.output[-1]["content"] = [part]
        closed = self._event("response.content_part.done", **self._where(), content_index=0,
                             part=part)
        return [done, closed]

    def arguments_delta(self, fragment: str) -> dict[str, Any]:
        self.output[-1]["arguments"] += fragment
        return self._event("response.function_call_arguments.delta", **self._where(),
                           delta=fragment)

    def arguments_done(self) -> dict[str, Any]:
        item = self.output[-1]
        return self._event("response.function_call_arguments.done", **self._where(),
                           arguments=item["arguments"], name=item["name"])

    def close_item(self, status: str = "completed") -> dict[str, Any]:
        item = self.output[-1]
        if "status" in item:
            item["status"] = status
        return self._event("response.output_item.done", output_index=len(self.output) - 1,
                           item=_snapshot(item))

    def error(self, message: str, code: str = "server_error") -> dict[str, Any]:
        return self._event("error", code=code, message=message, param=None)
