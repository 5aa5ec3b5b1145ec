"""The OpenAI Responses streaming protocol as a state machine (`responses_event_order`).

Design rules, h11 style:

- Two tables below are the protocol: `STREAM_TRANSITIONS` for the response as a whole and
  `ITEM_TRANSITIONS` for each output item (`output_index`). Any event not allowed by the table in
  the current state is a failure naming the state, the event and its position.
- Events that name an output item (they carry `output_index`) drive that item's machine; they
  are legal only while the response is in progress. `response.output_item.added` opens item
  `len(items)`; no item may be left open by `response.completed` / `response.incomplete`.
- Unknown event types are tolerated where they cannot confuse a client: on an open item (tool
  call progress events such as `response.web_search_call.searching`) or while in progress.
- `event:` lines are optional (one real recording strips them) but must equal the payload
  `type` when present; `sequence_number` is either on every event, strictly increasing, or on
  none (the 2025-03 recording has none).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.sse import SSEEvent

NAME = "responses_event_order"
# One defect in four forms: a response cut by max_output_tokens reported completed (its body's
# status; its stream ending response.completed: the event machine, the feature's terminal event,
# a golden's).
CUT_ENDS_COMPLETED = ("responses_event_order: a response cut by max_output_tokens is reported "
                      "completed, not incomplete")
# One defect in two forms: the text deltas of a Responses stream do not spell its text (the
# route's check and the SDK's stream helper).
STREAM_TEXT = "responses_event_order: the streamed text deltas do not spell the response's text"


class Phase(enum.Enum):
    START = "start"
    CREATED = "created"
    IN_PROGRESS = "in_progress"
    ERRORED = "errored"
    CLOSED = "closed"


class Item(enum.Enum):
    OPEN = "open"
    PART_OPEN = "content part open"
    PART_TEXT_DONE = "content part text done"
    SUMMARY_OPEN = "summary part open"
    SUMMARY_TEXT_DONE = "summary text done"
    ARGUMENTS_DONE = "arguments done"
    DONE = "done"


TERMINAL_STATUS = {
    "response.completed": "completed",
    "response.incomplete": "incomplete",
    "response.failed": "failed",
}

STREAM_TRANSITIONS: dict[Phase, dict[str, Phase]] = {
    Phase.START: {"response.created": Phase.CREATED},
    Phase.CREATED: {
        "response.queued": Phase.CREATED,
        "response.in_progress": Phase.IN_PROGRESS,
        "error": Phase.ERRORED,
        "response.failed": Phase.CLOSED,
    },
    Phase.IN_PROGRESS: {
        "response.output_item.added": Phase.IN_PROGRESS,
        "error": Phase.ERRORED,
        "response.completed": Phase.CLOSED,
        "response.incomplete": Phase.CLOSED,
        "response.failed": Phase.CLOSED,
    },
    Phase.ERRORED: {"response.failed": Phase.CLOSED},
    Phase.CLOSED: {},
}
# OpenAI documents `error` as an event that may end a stream.
FINAL_PHASES = frozenset({Phase.CLOSED, Phase.ERRORED})

ITEM_TRANSITIONS: dict[Item, dict[str, Item]] = {
    Item.OPEN: {
        "response.content_part.added": Item.PART_OPEN,
        "response.reasoning_summary_part.added": Item.SUMMARY_OPEN,
        "response.function_call_arguments.delta": Item.OPEN,
        "response.function_call_arguments.done": Item.ARGUMENTS_DONE,
        "response.output_item.done": Item.DONE,
    },
    Item.PART_OPEN: {
        "response.output_text.delta": Item.PART_OPEN,
        "response.output_text.annotation.added": Item.PART_OPEN,
        "response.refusal.delta": Item.PART_OPEN,
        "response.reasoning_text.delta": Item.PART_OPEN,
        "response.output_text.done": Item.PART_TEXT_DONE,
        "response.refusal.done": Item.PART_TEXT_DONE,
        "response.reasoning_text.done": Item.PART_TEXT_DONE,
    },
    Item.PART_TEXT_DONE: {
        "response.output_text.annotation.added": Item.PART_TEXT_DONE,
        "response.content_part.done": Item.OPEN,
    },
    Item.SUMMARY_OPEN: {
        "response.reasoning_summary_text.delta": Item.SUMMARY_OPEN,
        "response.reasoning_summary_text.done": Item.SUMMARY_TEXT_DONE,
    },
    Item.SUMMARY_TEXT_DONE: {"response.reasoning_summary_part.done": Item.OPEN},
    Item.ARGUMENTS_DONE: {"response.output_item.done": Item.DONE},
    Item.DONE: {},
}
ITEM_EVENTS = frozenset(name for table in ITEM_TRANSITIONS.values() for name in table)

# Which item type an event family may target.
ITEM_TYPE_BY_PREFIX = {
    "response.output_text.": "message",
    "response.refusal.": "message",
    "response.function_call_arguments.": "function_call",
    "response.reasoning_summary_part.": "reasoning",
    "response.reasoning_summary_text.": "reasoning",
    "response.reasoning_text.": "reasoning",
}
# Deltas whose concatenation the matching `.done` event repeats in full.
DONE_FIELD = {
    "response.output_text.done": "text",
    "response.refusal.done": "refusal",
    "response.reasoning_text.done": "text",
    "response.reasoning_summary_text.done": "text",
    "response.function_call_arguments.done": "arguments",
}


@dataclass
class _OutputItem:
    index: int
    type: str
    id: str | None
    state: Item = Item.OPEN
    parts: int = 0
    summaries: int = 0
    buffer: list[str] = field(default_factory=list)  # deltas since the part/arguments began


@dataclass(frozen=True)
class ResponsesStream:
    """What a valid stream told us."""

    payloads: list[dict[str, Any]]
    terminal: str  # the last event type
    response: dict[str, Any]  # the final `response` object ({} when the stream ended on error)
    output_text: str  # all output_text deltas, in order
    unknown_events: list[str]


def _decode(index: int, event: SSEEvent) -> dict[str, Any]:
    try:
        payload = json.loads(event.data)
    except ValueError:
        fail(NAME, f"event {index}: data is not JSON", index=index, raw=event.raw)
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        fail(NAME, f"event {index}: payload has no string `type`", index=index, raw=event.raw)
    if event.event is not None and event.event != payload["type"]:
        fail(
            NAME,
            f"event {index}: `event: {event.event}` but payload type {payload['type']!r}",
            index=index,
            raw=event.raw,
        )
    return payload


def _check_sequence_numbers(payloads: Sequence[dict[str, Any]]) -> None:
    numbers = [p.get("sequence_number") for p in payloads]
    present = [n is not None for n in numbers]
    if any(present) and not all(present):
        missing = [i for i, has in enumerate(present) if not has]
        fail(
            NAME,
            f"sequence_number missing on events {missing[:10]} but present on others",
            missing=missing,
        )
    if not any(present):
        return
    for index, (before, after) in enumerate(zip(numbers, numbers[1:], strict=False), start=1):
        if not is_int(after) or not is_int(before) or after <= before:
            fail(
                NAME,
                f"event {index}: sequence_number {after!r} does not increase from {before!r}",
                index=index,
                payload=payloads[index],
            )


class _Machine:
    def __init__(self) -> None:
        self.phase = Phase.START
        self.items: list[_OutputItem] = []
        self.response_id: str | None = None
        self.text: list[str] = []
        self.unknown: list[str] = []
        self.response: dict[str, Any] = {}

    def feed(self, index: int, payload: dict[str, Any]) -> None:
        kind = payload["type"]
        if "output_index" in payload and kind != "response.output_item.added":
            if self.phase is not Phase.IN_PROGRESS:
                self._reject(index, payload, f"item event while the response is {self.phase.value}")
            self._item_event(index, payload, self._item(index, payload))
            return
        allowed = STREAM_TRANSITIONS[self.phase]
        if kind not in allowed:
            known = kind in ITEM_EVENTS or any(kind in t for t in STREAM_TRANSITIONS.values())
            if not known and self.phase is Phase.IN_PROGRESS:
                self.unknown.append(kind)
                return
            self._reject(index, payload, f"{kind!r} is not allowed while {self.phase.value}")
        if kind == "response.output_item.added":
            self._open_item(index, payload)
        elif kind == "error":
            self._check_error(index, payload)
        elif "response" in payload:
            self._response_event(index, payload)
        self.phase = allowed[kind]

    def _reject(self, index: int, payload: dict[str, Any], why: str,
                defect: str | None = None) -> NoReturn:
        fail(NAME, f"event {index} ({payload['type']}): {why}", index=index, payload=payload,
             defect=defect)

    def _response_event(self, index: int, payload: dict[str, Any]) -> None:
        response = payload["response"]
        if not isinstance(response, dict):
            self._reject(index, payload, "`response` is not an object")
        if self.response_id is None:
            self.response_id = response.get("id")
        elif response.get("id") != self.response_id:
            self._reject(index, payload, f"response.id changed from {self.response_id!r}")
        status = response.get("status")
        kind = payload["type"]
        wanted = TERMINAL_STATUS.get(kind)
        if wanted is None and status not in ("queued", "in_progress"):
            self._reject(index, payload, f"response.status {status!r} before the end")
        if wanted is not None and status != wanted:
            self._reject(index, payload, f"response.status is {status!r}, expected {wanted!r}",
                         CUT_ENDS_COMPLETED if (kind, status) == ("response.completed",
                                                                  "incomplete") else None)
        if kind in ("response.completed", "response.incomplete"):
            self._check_all_done(index, payload, response)
        self.response = response

    def _check_all_done(
        self, index: int, payload: dict[str, Any], response: dict[str, Any]
    ) -> None:
        open_items = [item.index for item in self.items if item.state is not Item.DONE]
        if open_items:
            self._reject(index, payload, f"output item(s) {open_items} left open")
        output = response.get("output")
        if not isinstance(output, list) or len(output) != len(self.items):
            self._reject(
                index,
                payload,
                f"response.output does not list the {len(self.items)} streamed item(s)",
            )
        for item, final in zip(self.items, output, strict=True):
            if item.id is not None and isinstance(final, dict) and final.get("id") != item.id:
                self._reject(
                    index,
                    payload,
                    f"response.output[{item.index}].id differs from the streamed item",
                )

    def _check_error(self, index: int, payload: dict[str, Any]) -> None:
        # OpenAI documents code/message/param at the top level; the live API nests them in `error`
        nested = payload.get("error")
        source = nested if isinstance(nested, dict) else payload
        if not isinstance(source.get("message"), str):
            self._reject(index, payload, "an error event needs a message")

    def _open_item(self, index: int, payload: dict[str, Any]) -> None:
        item = payload.get("item")
        if payload.get("output_index") != len(self.items):
            self._reject(
                index,
                payload,
                f"output_index {payload.get('output_index')!r}, "
                f"expected the next index {len(self.items)}",
            )
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self._reject(index, payload, "`item` is not an object with a type")
        self.items.append(_OutputItem(len(self.items), item["type"], item.get("id")))

    def _item(self, index: int, payload: dict[str, Any]) -> _OutputItem:
        position = payload["output_index"]
        if not is_int(position) or not 0 <= position < len(self.items):
            self._reject(index, payload, f"output_index {position!r} names no added item")
        item = self.items[position]
        if item.id is not None and payload.get("item_id", item.id) != item.id:
            self._reject(index, payload, f"item_id does not match item {position} ({item.id})")
        return item

    def _item_event(self, index: int, payload: dict[str, Any], item: _OutputItem) -> None:
        kind = payload["type"]
        if kind not in ITEM_EVENTS:
            if item.state is Item.DONE:
                self._reject(index, payload, f"event for item {item.index}, already done")
            self.unknown.append(kind)
            return
        allowed = ITEM_TRANSITIONS[item.state]
        if kind not in allowed:
            self._reject(
                index,
                payload,
                f"not allowed while item {item.index} ({item.type}) is {item.state.value}",
            )
        for prefix, item_type in ITEM_TYPE_BY_PREFIX.items():
            if kind.startswith(prefix) and item.type != item_type:
                self._reject(index, payload, f"targets item {item.index} of type {item.type!r}")
        self._check_indexes(index, payload, item)
        self._track_text(index, payload, item)
        item.state = allowed[kind]

    def _check_indexes(self, index: int, payload: dict[str, Any], item: _OutputItem) -> None:
        kind = payload["type"]
        for key, count in (("content_index", item.parts), ("summary_index", item.summaries)):
            if key not in payload:
                continue
            opening = kind.endswith("_part.added")
            wanted = count if opening else count - 1
            if payload[key] != wanted:
                self._reject(index, payload, f"{key} {payload[key]!r}, expected {wanted}")
            if opening and key == "content_index":
                item.parts += 1
            elif opening:
                item.summaries += 1
        if kind == "response.output_item.done":
            final = payload.get("item")
            if not isinstance(final, dict) or final.get("type") != item.type:
                self._reject(index, payload, f"the done item is not the added {item.type!r} item")
            if item.id is not None and final.get("id") != item.id:
                self._reject(index, payload, f"the done item id is not {item.id!r}")

    def _track_text(self, index: int, payload: dict[str, Any], item: _OutputItem) -> None:
        kind = payload["type"]
        if kind.endswith("_part.added"):
            item.buffer = []
        elif kind.endswith(".delta"):
            delta = payload.get("delta")
            if not isinstance(delta, str):
                self._reject(index, payload, "delta is not a string")
            item.buffer.append(delta)
            if kind == "response.output_text.delta":
                self.text.append(delta)
        elif kind in DONE_FIELD and item.buffer:
            streamed = "".join(item.buffer)
            if payload.get(DONE_FIELD[kind]) != streamed:
                self._reject(
                    index, payload, f"{DONE_FIELD[kind]} differs from the concatenated deltas"
                )
            item.buffer = []


@check(
    NAME,
    severity=Severity.CRITICAL,
    description="Responses events follow the created → items → completed state machine",
)
def check_responses_stream(events: Sequence[SSEEvent]) -> ResponsesStream:
    if not events:
        fail(NAME, "the stream has no events")
    payloads = [_decode(index, event) for index, event in enumerate(events)]
    _check_sequence_numbers(payloads)
    machine = _Machine()
    for index, payload in enumerate(payloads):
        machine.feed(index, payload)
    if machine.phase not in FINAL_PHASES:
        fail(
            NAME,
            f"the stream ended while {machine.phase.value}, without response.completed, "
            "response.incomplete or response.failed",
            severity=Severity.CRITICAL,
            last_event=payloads[-1],
        )
    return ResponsesStream(
        payloads=payloads,
        terminal=payloads[-1]["type"],
        response=machine.response if machine.phase is Phase.CLOSED else {},
        output_text="".join(machine.text),
        unknown_events=machine.unknown,
    )
