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
thinking and tool_use blocks and their deltas, logprobs, declared tools. Exact mode (the
reference on its own fixture) compares everything.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def _plain(node: Any) -> bool:
    kind = node.get("type") if isinstance(node, dict) else None
    return not isinstance(kind, str) or kind in PLAIN_TYPES or kind.endswith("_error")


def is_base(root: Any, path: Sequence[Any]) -> bool:
    """Whether the value at ``path`` in ``root`` (a body, or one event's data) and every object
    on the way to it belong to a plain answer: no specific key crossed, no typed object of a kind
    a plain answer lacks."""
    node = root
    if not _plain(node):
        return False
    for step in path:
        if step in SPECIFIC_KEYS:
            return False
        try:
            node = node[step]
        except (KeyError, IndexError, TypeError):
            return False
        if step not in ENVELOPE_KEYS and not _plain(node):
            return False
    return True


def left_to_base(error: ValidationError, root: Any) -> bool:
    """A schema error on a base object (or a key every event carries): the base features judge
    it, the golden leaves it out."""
    path = list(error.absolute_path)
    if error.validator == "required" and not path and isinstance(root, dict):
        missing = {k for k in error.validator_value if k not in root}
        if missing and missing <= EVENT_KEYS and "type" in root:
            return True
    if error.validator in _OBJECT_VALIDATORS:
        return is_base(root, path)
    return bool(path) and is_base(root, path)
