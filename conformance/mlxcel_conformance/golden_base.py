"""What a golden in shape mode leaves to the body and parity features (one defect, one FAIL).

Every plain answer of a route carries the same base objects: a chat completion with its choice,
message and usage (a chunk with its choice and delta); a Response with its message item, text
part and usage, and the events that stream them; a Message with its text block and usage, and
its events; an error envelope. Their keys and JSON kinds are judged once, by the features made
for them (``chat.json.body``, ``chat.stream.framing``, ``responses.json.body``,
``responses.stream.event_order``, ``anthropic.json.body``, ``anthropic.stream.event_order``,
``parity.*`` and the error features), so a server that lacks ``choices[].logprobs`` fails those,
not every golden with a chat body.

A golden in shape mode judges what is specific to its case: the status, the content type, the
event order (chat streams) or the event state machine and terminal event (Responses and
Messages streams), and, of the contract's requirements and the reference's JSON kinds, those on
the objects the case adds: tool calls, function_call and reasoning items and their events,
thinking and tool_use blocks and their deltas, logprobs, declared tools. It judges them where
its own recording carries them (``Case``): a thinking block a server adds to a plain answer is
the business of the features that judge that stream, not of every golden it shows up in.
Exact mode (the reference on its own fixture) compares everything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema.exceptions import ValidationError

# Keys whose contents only some requests ask for.
SPECIFIC_KEYS = frozenset({"tool_calls", "function_call", "logprobs", "top_logprobs", "tools"})
# The `type` of every typed object (event, item, part, block, delta) a plain text answer carries.
PLAIN_TYPES = frozenset({
    # OpenAI Responses
    "response.created", "response.queued", "response.in_progress", "response.completed",
    "response.incomplete", "response.failed", "response.output_item.added",
    "response.output_item.done", "response.content_part.added", "response.content_part.done",
    "response.output_text.delta", "response.output_text.done", "message", "output_text",
    # Anthropic Messages
    "message_start", "content_block_start", "content_block_delta", "content_block_stop",
    "message_delta", "message_stop", "ping", "text", "text_delta",
    # error envelopes (and Anthropic's error types, which end in _error)
    "error",
})
# Keys whose object is base whatever its `type` says: the error envelope's `error`.
ENVELOPE_KEYS = frozenset({"error"})
# Keys every event of a typed stream carries, whatever it streams.
EVENT_KEYS = frozenset({"type", "sequence_number"})
# Validators that judge the object at the error's path itself (not a value under a key).
_OBJECT_VALIDATORS = frozenset({"required", "additionalProperties", "unevaluatedProperties",
                                "dependentRequired", "minProperties", "maxProperties"})


@dataclass(frozen=True)
class Case:
    """What a golden's own recording carries beyond a plain answer: the specific keys it has
    (with a value) and every object ``type`` in it. ``None`` for a case: everything counts."""

    keys: frozenset[str]
    types: frozenset[str]


def case_of(recorded: Any) -> Case:
    """The ``Case`` of a recorded transcript (its body or its events)."""
    keys: set[str] = set()
    types: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            keys.update(k for k, v in node.items() if k in SPECIFIC_KEYS and v not in (None, []))
            if isinstance(node.get("type"), str):
                types.add(node["type"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(recorded)
    return Case(frozenset(keys), frozenset(types))


def _plain(node: Any) -> bool:
    kind = node.get("type") if isinstance(node, dict) else None
    return not isinstance(kind, str) or kind in PLAIN_TYPES or kind.endswith("_error")


def is_base(root: Any, path: Sequence[Any], case: Case | None = None) -> bool:
    """Whether the value at ``path`` in ``root`` (a body, or one event's data) is not the
    golden's to judge: every object on the way to it belongs to a plain answer, or (with
    ``case``) the first one that does not is foreign to the case (its recording carries no such
    key or type)."""
    node = root
    if not _plain(node):
        return _foreign_type(node, case)
    for step in path:
        if step in SPECIFIC_KEYS:
            return case is not None and step not in case.keys
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return False
        if step not in ENVELOPE_KEYS and not _plain(node):
            return _foreign_type(node, case)
    return True


def _foreign_type(node: Any, case: Case | None) -> bool:
    return case is not None and node.get("type") not in case.types


def left_to_base(case: Case | None = None) -> Callable[[ValidationError, Any], bool]:
    """The schema errors a golden of ``case`` leaves out: those on base objects (or on a key
    every event carries), and those on objects foreign to the case."""

    def leave(error: ValidationError, root: Any) -> bool:
        path = list(error.absolute_path)
        if error.validator == "required" and not path and isinstance(root, dict):
            missing = {k for k in error.validator_value if k not in root}
            if missing and missing <= EVENT_KEYS and "type" in root:
                return True
        if error.validator in _OBJECT_VALIDATORS:
            return is_base(root, path, case)
        return bool(path) and is_base(root, path, case)

    return leave
