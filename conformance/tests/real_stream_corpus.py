"""Loaders for the vendored real API recordings (fixtures/real-streams) and helpers to build
deliberately broken copies of them. Shared by the check tests; not a test module itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.sse import SSEEvent, SSEStream, parse_sse

REAL_STREAMS = Path(__file__).resolve().parents[2] / "fixtures" / "real-streams"
NOT_DATA = frozenset({"README.md", "SHA256SUMS"})


def all_files() -> list[Path]:
    return sorted(p for p in REAL_STREAMS.rglob("*") if p.is_file() and p.name not in NOT_DATA)


def files(pattern: str) -> list[Path]:
    return sorted(REAL_STREAMS.glob(pattern))


def ids(paths: Sequence[Path]) -> list[str]:
    return [p.name for p in paths]


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def stream(name: str) -> SSEStream:
    """Parse one recorded SSE file, found by file name anywhere in the corpus."""
    return parse_sse(read(find(name)))


def find(name: str) -> Path:
    matches = [p for p in all_files() if p.name == name]
    assert len(matches) == 1, name
    return matches[0]


def jsonl_events(path: Path) -> list[SSEEvent]:
    """The recorder stripped the SSE framing: one event JSON per line, no `event:` line."""
    lines = [line for line in read(path).splitlines() if line.strip()]
    return [SSEEvent(event=None, data=line, raw=f"data: {line}\n") for line in lines]


def responses_events(path: Path) -> list[SSEEvent]:
    if path.name.endswith(".jsonl"):
        return jsonl_events(path)
    return list(parse_sse(read(path)).events)


def status_from_name(path: Path) -> int:
    match = re.search(r"-(\d{3})-", path.name)
    assert match, path.name
    return int(match.group(1))


def cassette_response(path: Path) -> tuple[int, Any]:
    """A VCR cassette: the body is stored as YAML `parsed_body`."""
    data = yaml.safe_load(read(path))
    response = data["interactions"][0]["response"]
    return response["status"]["code"], response["parsed_body"]


def recording_responses(path: Path) -> list[tuple[int, Any]]:
    """An anthropic-sdk recording: a list of request/response pairs with JSON bodies."""
    return [
        (pair["response"]["status_code"], pair["response"]["body"])
        for pair in json.loads(read(path))
    ]


# --- building broken copies -------------------------------------------------------------------


def payloads(events: Sequence[SSEEvent]) -> list[Any]:
    return [json.loads(e.data) if e.data != "[DONE]" else "[DONE]" for e in events]


def data_event(payload: Any, event: str | None = None) -> SSEEvent:
    """An SSE event carrying `payload` (a dict, or the literal "[DONE]")."""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    head = f"event: {event}\n" if event is not None else ""
    return SSEEvent(event=event, data=data, raw=f"{head}data: {data}\n")


def named_events(items: Sequence[dict[str, Any]]) -> list[SSEEvent]:
    """Events whose `event:` line names the payload type (Responses, Anthropic)."""
    return [data_event(item, item.get("type")) for item in items]


def to_text(events: Sequence[SSEEvent]) -> str:
    return "".join(event.raw + "\n" for event in events)


@contextmanager
def rejects(check_name: str) -> Iterator[pytest.ExceptionInfo[ConformanceFailure]]:
    """Assert the block raises a ConformanceFailure of `check_name`."""
    with pytest.raises(ConformanceFailure) as info:
        yield info
    assert info.value.check == check_name, str(info.value)
