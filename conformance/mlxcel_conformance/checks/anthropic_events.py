"""The Anthropic Messages streaming protocol as a state machine (`anthropic_event_order`).

Design rules, h11 style:

- `TRANSITIONS` below is the protocol: message_start, then content blocks (start → deltas →
  stop, indexes 0, 1, 2, ...), then one message_delta and message_stop last. `ping` may come
  anywhere after message_start; `error` ends the stream from any state.
- `DELTAS_BY_BLOCK` says which delta types each block type accepts. Blocks named `*_tool_result`
  arrive whole in content_block_start and take no delta; unknown block types are tolerated.
- Every event needs an `event:` line equal to its payload `type`: the Anthropic SDK silently
  drops events without one.
"""

from __future__ import annotations

import copy
import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.sse import SSEEvent

NAME = "anthropic_event_order"


class Phase(enum.Enum):
    START = "before message_start"
    MESSAGE = "between content blocks"
    BLOCK = "inside a content block"
    DELTA = "after message_delta"
    STOPPED = "after message_stop"
    ERRORED = "after error"


TRANSITIONS: dict[Phase, dict[str, Phase]] = {
    Phase.START: {"message_start": Phase.MESSAGE, "error": Phase.ERRORED},
    Phase.MESSAGE: {
        "content_block_start": Phase.BLOCK,
        "message_delta": Phase.DELTA,
        "ping": Phase.MESSAGE,
        "error": Phase.ERRORED,
    },
    Phase.BLOCK: {
        "content_block_delta": Phase.BLOCK,
        "content_block_stop": Phase.MESSAGE,
        "ping": Phase.BLOCK,
        "error": Phase.ERRORED,
    },
    Phase.DELTA: {"message_stop": Phase.STOPPED, "ping": Phase.DELTA, "error": Phase.ERRORED},
    Phase.STOPPED: {},
    Phase.ERRORED: {},
}
FINAL_PHASES = frozenset({Phase.STOPPED, Phase.ERRORED})

DELTAS_BY_BLOCK: dict[str, frozenset[str]] = {
    "text": frozenset({"text_delta", "citations_delta"}),
    "thinking": frozenset({"thinking_delta", "signature_delta"}),
    "redacted_thinking": frozenset(),
    "tool_use": frozenset({"input_json_delta"}),
    "server_tool_use": frozenset({"input_json_delta"}),
    "mcp_tool_use": frozenset({"input_json_delta"}),
}
# The string field each delta type appends to, and the block field it builds.
DELTA_FIELDS: dict[str, tuple[str, str]] = {
    "text_delta": ("text", "text"),
    "thinking_delta": ("thinking", "thinking"),
    "signature_delta": ("signature", "signature"),
    "input_json_delta": ("partial_json", "input"),
}
STOP_REASONS = frozenset(
    {
        "end_turn",
        "max_tokens",
        "stop_sequence",
        "tool_use",
        "pause_turn",
        "refusal",
        "model_context_window_exceeded",
    }
)


@dataclass
class _Block:
    index: int
    type: str
    start: dict[str, Any]
    pieces: dict[str, list[str]] = field(default_factory=dict)
    deltas: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class AnthropicStream:
    """What a valid stream told us."""

    payloads: list[dict[str, Any]]
    terminal: str  # "message_stop" or "error"
    message: dict[str, Any]  # the message assembled as a non-streaming body would carry it
    unknown_blocks: list[str]


def _decode(index: int, event: SSEEvent) -> dict[str, Any]:
    try:
        payload = json.loads(event.data)
    except ValueError:
        fail(NAME, f"event {index}: data is not JSON", index=index, raw=event.raw)
    if not isinstance(payload, dict) or not isinstance(payload.get("type"), str):
        fail(NAME, f"event {index}: payload has no string `type`", index=index, raw=event.raw)
    if event.event is None:
        fail(
            NAME,
            f"event {index} ({payload['type']}) has no `event:` line; the Anthropic SDK drops it",
            severity=Severity.CRITICAL,
            index=index,
            raw=event.raw,
        )
    if event.event != payload["type"]:
        fail(
            NAME,
            f"event {index}: `event: {event.event}` but payload type {payload['type']!r}",
            index=index,
            raw=event.raw,
        )
    return payload


class _Machine:
    def __init__(self) -> None:
        self.phase = Phase.START
        self.blocks: list[_Block] = []
        self.message: dict[str, Any] = {}
        self.unknown: list[str] = []

    def feed(self, index: int, payload: dict[str, Any]) -> None:
        kind = payload["type"]
        allowed = TRANSITIONS[self.phase]
        if kind not in allowed:
            self._reject(index, payload, f"not allowed {self.phase.value}")
        handler = getattr(self, "_on_" + kind, None)
        if handler is not None:
            handler(index, payload)
        self.phase = allowed[kind]

    def _reject(self, index: int, payload: dict[str, Any], why: str) -> NoReturn:
        fail(NAME, f"event {index} ({payload['type']}): {why}", index=index, payload=payload)

    def _on_message_start(self, index: int, payload: dict[str, Any]) -> None:
        message: Any = payload.get("message")
        ok = (
            isinstance(message, dict)
            and message.get("type") == "message"
            and message.get("role") == "assistant"
            and isinstance(message.get("id"), str)
            and isinstance(message.get("model"), str)
            and message.get("content") == []
            and isinstance(message.get("usage"), dict)
        )
        if not ok:
            self._reject(
                index,
                payload,
                "message needs type 'message', role 'assistant', id, "
                "model, empty content and usage",
            )
        self.message = copy.deepcopy(message)

    def _on_content_block_start(self, index: int, payload: dict[str, Any]) -> None:
        block = payload.get("content_block")
        if payload.get("index") != len(self.blocks):
            self._reject(
                index, payload, f"index {payload.get('index')!r}, expected {len(self.blocks)}"
            )
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            self._reject(index, payload, "content_block is not an object with a type")
        if block["type"] not in DELTAS_BY_BLOCK and not block["type"].endswith("_tool_result"):
            self.unknown.append(block["type"])
        self.blocks.append(_Block(len(self.blocks), block["type"], copy.deepcopy(block)))

    def _on_content_block_delta(self, index: int, payload: dict[str, Any]) -> None:
        block = self._current(index, payload)
        delta: Any = payload.get("delta")
        kind = delta.get("type") if isinstance(delta, dict) else None
        allowed = DELTAS_BY_BLOCK.get(block.type)
        if block.type.endswith("_tool_result"):
            allowed = frozenset()
        if allowed is not None and kind not in allowed:
            self._reject(
                index,
                payload,
                f"delta {kind!r} in a {block.type!r} block (allowed: {sorted(allowed)})",
            )
        if kind == "thinking_delta" and "signature_delta" in block.deltas:
            self._reject(index, payload, "thinking_delta after the block's signature_delta")
        block.deltas.append(str(kind))
        if kind in DELTA_FIELDS:
            source, _ = DELTA_FIELDS[kind]
            value = delta.get(source) if isinstance(delta, dict) else None
            if not isinstance(value, str):
                self._reject(index, payload, f"{kind}.{source} is not a string")
            block.pieces.setdefault(kind, []).append(value)

    def _on_content_block_stop(self, index: int, payload: dict[str, Any]) -> None:
        block = self._current(index, payload)
        for kind, pieces in block.pieces.items():
            _, target = DELTA_FIELDS[kind]
            joined = "".join(pieces)
            if kind != "input_json_delta":
                block.start[target] = block.start.get(target, "") + joined
                continue
            try:
                parsed = json.loads(joined) if joined else {}
            except ValueError:
                parsed = None
            if not isinstance(parsed, dict):
                self._reject(
                    index,
                    payload,
                    f"block {block.index}: the input_json_delta "
                    "fragments do not form a JSON object",
                )
            block.start[target] = parsed

    def _current(self, index: int, payload: dict[str, Any]) -> _Block:
        block = self.blocks[-1]
        if payload.get("index") != block.index:
            self._reject(
                index, payload, f"index {payload.get('index')!r} but block {block.index} is open"
            )
        return block

    def _on_message_delta(self, index: int, payload: dict[str, Any]) -> None:
        delta: Any = payload.get("delta")
        reason = delta.get("stop_reason") if isinstance(delta, dict) else None
        if reason not in STOP_REASONS:
            self._reject(
                index, payload, f"stop_reason {reason!r} is not one of {sorted(STOP_REASONS)}"
            )
        usage = payload.get("usage")
        if not isinstance(usage, dict) or not is_int(usage.get("output_tokens")):
            self._reject(index, payload, "usage.output_tokens is not an integer")
        self.message.update(delta)
        self.message.setdefault("usage", {}).update(usage)

    def _on_error(self, index: int, payload: dict[str, Any]) -> None:
        error = payload.get("error")
        ok = (
            isinstance(error, dict)
            and isinstance(error.get("type"), str)
            and isinstance(error.get("message"), str)
        )
        if not ok:
            self._reject(index, payload, "error needs a type and a message")


@check(
    NAME,
    severity=Severity.CRITICAL,
    description="Anthropic events follow message_start → blocks → message_delta → message_stop",
)
def check_anthropic_stream(events: Sequence[SSEEvent]) -> AnthropicStream:
    if not events:
        fail(NAME, "the stream has no events")
    payloads = [_decode(index, event) for index, event in enumerate(events)]
    machine = _Machine()
    for index, payload in enumerate(payloads):
        machine.feed(index, payload)
    if machine.phase not in FINAL_PHASES:
        fail(
            NAME,
            f"the stream ended {machine.phase.value}, without message_stop",
            last_event=payloads[-1],
        )
    message = machine.message
    if message:
        message["content"] = [block.start for block in machine.blocks]
    return AnthropicStream(
        payloads=payloads,
        terminal=payloads[-1]["type"],
        message=message,
        unknown_blocks=machine.unknown,
    )
