"""Anthropic's ``Message`` keys that its current API reference requires, nullable, and the older
recordings predate: ``container`` and ``stop_details`` on the message and
``output_tokens_details`` (with ``server_tool_use`` and the cache and tier keys) on its
``usage``.

Sources: Anthropic's API reference, Messages (https://docs.anthropic.com/en/api/messages,
"Response": ``container``, ``usage``), whose OpenAPI document anthropic-sdk-python's
``types/message.py``, ``types/usage.py`` and ``types/output_tokens_details.py`` are generated
from (``OutputTokensDetails.thinking_tokens``: "Always <= output_tokens").

The real recordings in ``fixtures/real-streams/anthropic/`` (2024-2026) carry neither
``container`` nor ``output_tokens_details`` on a message: a server may still send that older
shape, so presence is required only of a target whose profile claims the current shapes (the
reference, the real API); from any server a key that is present must have the schema's type.
``message_delta`` may carry ``container`` (an object, in the code-execution recording) and
``usage.output_tokens_details``: typed when present, never required.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

# key -> the Python types its value may have (None: the schema's null)
MESSAGE_KEYS: dict[str, tuple[type, ...]] = {"container": (dict, type(None)),
                                              "stop_details": (dict, type(None))}
USAGE_KEYS: dict[str, tuple[type, ...]] = {
    "cache_creation_input_tokens": (int, type(None)),
    "cache_read_input_tokens": (int, type(None)),
    "cache_creation": (dict, type(None)),
    "inference_geo": (str, type(None)),
    "service_tier": (str, type(None)),
    "server_tool_use": (dict, type(None)),
    "output_tokens_details": (dict, type(None)),
}
NAME = "anthropic_schema_keys"


def _problems(obj: Mapping[str, Any], keys: dict[str, tuple[type, ...]], path: str,
              required: bool) -> list[str]:
    found = []
    for key, types in keys.items():
        if key not in obj:
            if required:
                found.append(f"{path} lacks {key}")
        elif isinstance(obj[key], bool) or not isinstance(obj[key], types):
            found.append(f"{path}.{key} is {type(obj[key]).__name__}, not "
                         f"{' or '.join('null' if t is type(None) else t.__name__ for t in types)}")
    return found


def _details_problems(usage: Mapping[str, Any], path: str) -> list[str]:
    details = usage.get("output_tokens_details")
    if not isinstance(details, dict):
        return []
    thinking = details.get("thinking_tokens")
    output = usage.get("output_tokens")
    if isinstance(thinking, bool) or not isinstance(thinking, int) or thinking < 0:
        return [f"{path}.output_tokens_details.thinking_tokens is {thinking!r}, not an integer "
                ">= 0"]
    if isinstance(output, int) and thinking > output:
        return [f"{path}.output_tokens_details.thinking_tokens {thinking} exceeds "
                f"output_tokens {output}"]
    return []


def _container_problems(container: Any, path: str) -> list[str]:
    if container is None:
        return []
    if not (isinstance(container, dict) and isinstance(container.get("id"), str)
            and isinstance(container.get("expires_at"), str)):
        return [f"{path}.container is not null nor an object with string id and expires_at"]
    return []


def message_problems(message: Any, path: str, current: bool) -> list[str]:
    """What a ``Message`` (a JSON answer or ``message_start``'s message) lacks or mistypes."""
    if not isinstance(message, dict):
        return [f"{path} is not an object"]
    found = _problems(message, MESSAGE_KEYS, path, current)
    found += _container_problems(message.get("container"), path) if not found else []
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return found + [f"{path}.usage is not an object"]
    found += _problems(usage, USAGE_KEYS, f"{path}.usage", current)
    return found + _details_problems(usage, f"{path}.usage")


def stream_problems(events: list[Any], current: bool) -> list[str]:
    """``message_start``'s message judged as a message; ``message_delta``'s optional keys
    typed where present."""
    found: list[str] = []
    for n, event in enumerate(events):
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "message_start":
            found += message_problems(event.get("message"), f"event {n}.message", current)
        elif kind == "message_delta":
            delta, usage = event.get("delta") or {}, event.get("usage") or {}
            if isinstance(delta, dict) and "container" in delta:
                found += _container_problems(delta["container"], f"event {n}.delta")
            if isinstance(usage, dict):
                found += _problems(usage, {"output_tokens_details": (dict, type(None)),
                                           "server_tool_use": (dict, type(None))},
                                   f"event {n}.usage", False)
                found += _details_problems(usage, f"event {n}.usage")
    return found


def _report(what: str, problems: list[str], current: bool) -> None:
    if problems:
        shape = "the current schema" if current else "the schema (older shape accepted)"
        fail(NAME, f"{what}: {problems[0]} ({shape})", problems=problems[:12])


@check(NAME, severity=Severity.MEDIUM,
       description="a Message has Anthropic's required nullable keys (container, usage."
                   "output_tokens_details...) with their types; older shape from other servers")
def check_anthropic_schema_keys(what: str, message: Any, *, current: bool) -> None:
    _report(what, message_problems(message, "$", current), current)


def check_anthropic_stream_schema_keys(what: str, events: list[Any], *, current: bool) -> None:
    """The same check over a stream's events (reported under the same name)."""
    _report(what, stream_problems(events, current), current)
