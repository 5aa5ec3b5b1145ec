"""Checks on the SSE framing of a streamed response, independent of the API family.

`sse_framing` runs first on every stream and hands back the decoded JSON payloads that the
protocol checks (chat chunks, Responses events, Anthropic events) consume.
"""

from __future__ import annotations

import json
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.sse import SSEStream, parse_sse

DONE = "[DONE]"
_KNOWN_FIELDS = frozenset({"event", "data", "id", "retry"})
_DATALESS_OK = frozenset({"id", "retry"})  # a block of only these legitimately dispatches nothing


def _as_stream(stream: SSEStream | str) -> SSEStream:
    return parse_sse(stream) if isinstance(stream, str) else stream


def _field_names(raw: str) -> list[str]:
    names = []
    for line in raw.splitlines():
        if line and not line.startswith(":"):
            names.append(line.partition(":")[0])
    return names


@check(
    "sse_framing",
    severity=Severity.CRITICAL,
    description="well-formed SSE: known fields, every block has data, JSON data, no partial event",
)
def check_sse_framing(stream: SSEStream | str, *, json_data: bool = True) -> list[Any]:
    """Return the decoded JSON payload of every event (`[DONE]` is skipped)."""
    stream = _as_stream(stream)
    if stream.trailing_incomplete:
        fail(
            "sse_framing",
            "the stream ends inside an event (no blank line after it): clients discard it",
            trailing=stream.trailing_incomplete,
        )
    for block in stream.discarded:
        names = _field_names(block)
        if not set(names) <= _DATALESS_OK:
            fail(
                "sse_framing",
                "a block without a `data:` line is silently dropped by every SSE client",
                block=block,
                fields=names,
            )
    payloads: list[Any] = []
    for index, event in enumerate(stream.events):
        unknown = [name for name in _field_names(event.raw) if name not in _KNOWN_FIELDS]
        if unknown:
            fail(
                "sse_framing",
                f"event {index} has unknown field line(s) {unknown}: clients ignore them",
                severity=Severity.MEDIUM,
                index=index,
                raw=event.raw,
            )
        if not json_data or event.data == DONE:
            continue
        try:
            payloads.append(json.loads(event.data))
        except ValueError as exc:
            fail(
                "sse_framing",
                f"event {index}: data is not JSON ({exc})",
                index=index,
                data=event.data,
            )
    return payloads


@check(
    "done_terminator",
    severity=Severity.CRITICAL,
    description="OpenAI chat/completions streams end with exactly one `data: [DONE]`",
)
def check_done_terminator(stream: SSEStream | str) -> int:
    """Return the number of events before `[DONE]`."""
    stream = _as_stream(stream)
    positions = [i for i, event in enumerate(stream.events) if event.data == DONE]
    if not positions:
        fail(
            "done_terminator",
            "no `data: [DONE]` event: the OpenAI SDK and most clients wait for it",
            last_event=stream.events[-1].raw if stream.events else None,
            trailing=stream.trailing_incomplete,
        )
    if len(positions) > 1:
        fail(
            "done_terminator",
            f"{len(positions)} `[DONE]` events; the OpenAI SDK stops reading at the first",
            indexes=positions,
        )
    if positions[0] != len(stream.events) - 1:
        fail(
            "done_terminator",
            "events follow `[DONE]`; the OpenAI SDK never reads them",
            done_index=positions[0],
            after=[event.raw for event in stream.events[positions[0] + 1 :]],
        )
    if stream.events[-1].event not in (None, "message"):
        fail(
            "done_terminator",
            f"`[DONE]` carries `event: {stream.events[-1].event}`",
            severity=Severity.MEDIUM,
            raw=stream.events[-1].raw,
        )
    return positions[0]


@check(
    "no_done_terminator",
    severity=Severity.MEDIUM,
    description="Responses, Anthropic and llama-server native streams carry no `[DONE]`",
)
def check_no_done_terminator(stream: SSEStream | str) -> None:
    stream = _as_stream(stream)
    positions = [i for i, event in enumerate(stream.events) if event.data == DONE]
    if positions:
        fail(
            "no_done_terminator",
            "`data: [DONE]` is not part of this protocol; strict clients fail to decode it",
            indexes=positions,
        )
