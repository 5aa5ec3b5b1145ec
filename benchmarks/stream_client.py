"""A lean streaming client for benchmarks: one HTTP/1.1 POST on a fresh connection, its
Server-Sent Events read as they arrive, each token-bearing event timestamped.

It is deliberately small (asyncio streams, no HTTP library): the client shares the CPU with
the servers it measures, and httpx's per-line machinery cost several times what this parser
does per event at ~2,000 events/s. Every server gets the same client, the same fresh
connection per request (``Connection: close``; mlx_lm.server speaks HTTP/1.0 anyway) and the
same counting rules:

- a **token event** is a chat chunk whose first choice's ``delta`` carries non-empty
  ``content`` or ``reasoning_content`` (or a completions chunk with non-empty ``text``);
- **tokens** are ``usage.completion_tokens`` when the server reports usage, else the number of
  token events (``counted_by`` says which);
- **TTFT** is the time from sending the request to the first token event, and the
  **inter-token gaps** are the times between consecutive token events of one stream.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StreamResult:
    ok: bool = False
    status: int | None = None
    token_events: int = 0
    usage_tokens: int | None = None
    prompt_tokens: int | None = None  # usage.prompt_tokens, where reported
    ttft: float | None = None
    gaps: list[float] = field(default_factory=list)
    headers: float | None = None  # seconds from sending to the response's status line
    end: float | None = None  # seconds from sending to the end of the stream
    error: str | None = None

    @property
    def tokens(self) -> int:
        return self.usage_tokens if self.usage_tokens is not None else self.token_events

    @property
    def counted_by(self) -> str:
        return "usage" if self.usage_tokens is not None else "deltas"


def token_text(event: dict[str, Any]) -> str:
    """The generated text an OpenAI-style stream event carries (chat or completions)."""
    choices = event.get("choices") or []
    if not choices or not isinstance(choices[0], dict):
        return ""
    choice = choices[0]
    delta = choice.get("delta")
    if isinstance(delta, dict):
        return str(delta.get("content") or "") + str(delta.get("reasoning_content") or "")
    return str(choice.get("text") or "")


class EventParser:
    """Splits a byte stream into SSE ``data:`` payloads (events end with a blank line)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data.replace(b"\r\n", b"\n")
        *events, self._buffer = self._buffer.split(b"\n\n")
        out = []
        for event in events:
            for line in event.split(b"\n"):
                if line.startswith(b"data:"):
                    out.append(line[5:].strip())
        return out


class _Body:
    """The response body, chunked or not, as the pieces arrive."""

    def __init__(self, reader: asyncio.StreamReader, chunked: bool, length: int | None) -> None:
        self.reader, self.chunked, self.left = reader, chunked, length

    async def read(self) -> bytes:
        if self.chunked:
            size_line = await self.reader.readline()
            if not size_line:
                return b""
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                await self.reader.readline()
                return b""
            data = await self.reader.readexactly(size + 2)
            return data[:-2]
        if self.left is not None:
            if self.left <= 0:
                return b""
            data = await self.reader.read(min(self.left, 65536))
            self.left -= len(data)
            return data
        return await self.reader.read(65536)


def request_bytes(host: str, port: int, path: str, body: dict[str, Any],
                  api_key: str | None = None) -> bytes:
    payload = json.dumps(body, separators=(",", ":")).encode()
    head = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json",
            "Accept: text/event-stream", f"Content-Length: {len(payload)}", "Connection: close"]
    if api_key:
        head.append(f"Authorization: Bearer {api_key}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


async def _headers(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = await reader.readline()
    parts = status_line.split()
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/"):
        raise ConnectionError(f"bad status line {status_line[:80]!r}")
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers


def _consume(result: StreamResult, payload: bytes, now: float, started: float,
             last: float | None) -> float | None:
    """Account one ``data:`` payload; returns the time of the stream's latest token event."""
    if payload == b"[DONE]":
        return last
    event = json.loads(payload)
    if not isinstance(event, dict):
        return last
    if event.get("error"):
        result.error = f"error event: {json.dumps(event['error'])[:200]}"
    usage = event.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
        result.usage_tokens = usage["completion_tokens"]
        if isinstance(usage.get("prompt_tokens"), int):
            result.prompt_tokens = usage["prompt_tokens"]
    if not token_text(event):
        return last
    if result.ttft is None:
        result.ttft = now - started
    elif last is not None:
        result.gaps.append(now - last)
    result.token_events += 1
    return now


async def _exchange(result: StreamResult, host: str, port: int, path: str,
                    body: dict[str, Any], api_key: str | None, started: float) -> None:
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    try:
        writer.write(request_bytes(host, port, path, body, api_key))
        result.status, headers = await _headers(reader)
        result.headers = time.perf_counter() - started
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        length = headers.get("content-length")
        stream = _Body(reader, chunked, int(length) if length and not chunked else None)
        if result.status != 200:
            text = b""
            while piece := await stream.read():
                text += piece
            result.error = f"HTTP {result.status}: {text[:200].decode(errors='replace')}"
            return
        parser, last = EventParser(), None
        while piece := await stream.read():
            now = time.perf_counter()
            for payload in parser.feed(piece):
                last = _consume(result, payload, now, started, last)
        result.end = time.perf_counter() - started
        result.ok = result.error is None
    finally:
        writer.close()


async def stream_post(host: str, port: int, path: str, body: dict[str, Any], *,
                      api_key: str | None = None, timeout: float = 600.0) -> StreamResult:
    """POST ``body`` (a streaming request) on a fresh connection and read its events to the
    end; never raises for a network or protocol failure (``error`` says what happened)."""
    result = StreamResult()
    started = time.perf_counter()
    try:
        await asyncio.wait_for(_exchange(result, host, port, path, body, api_key, started),
                               timeout)
    except (OSError, asyncio.IncompleteReadError, ValueError, asyncio.TimeoutError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"[:300]
        result.ok = False
    return result
