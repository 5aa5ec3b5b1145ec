"""A replay target: a small HTTP server that answers the suite's requests with the real
recordings in ``fixtures/real-streams/`` (bytes as recorded), so the suite can be run end to end
against what the real OpenAI and Anthropic APIs sent. Not a test module itself.

Which recording answers a request is decided by the route and by what the request asks for
(a stream, tools). A test may swap any recording for a deliberately broken copy.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import real_stream_corpus as corpus

# (route, kind) -> the recording that answers it; kind: "json", "stream", "error".
ANSWERS: dict[tuple[str, str], str] = {
    ("/v1/chat/completions", "json"): "openai-chat-completion-text.json",
    ("/v1/chat/completions", "stream"): "openai-chat-stream-text-usage.sse",
    ("/v1/chat/completions", "error"): "openai-responses-error-400-model-not-found.json",
    # No JSON Response recording carries today's keys (openai-response-text.json is older):
    # the newest recording's final `response` object answers instead (see Replay.body).
    ("/v1/responses", "json"): "openai-responses-stream-text.sse#response.completed",
    ("/v1/responses", "stream"): "openai-responses-stream-text.sse",
    ("/v1/responses", "error"): "openai-responses-error-400-model-not-found.json",
    ("/v1/messages", "json"): "anthropic-message-text-max-tokens.json",
    ("/v1/messages", "stream"): "anthropic-stream-text.sse",
    ("/v1/messages", "error"): "anthropic-error-400-invalid-request.json",
    # A request with tools: the recorded tool calls.
    ("/v1/chat/completions", "tools.json"): "openai-chat-completion-tool-calls.json",
    ("/v1/chat/completions", "tools.stream"): "openai-chat-stream-tool-call.sse",
    ("/v1/messages", "tools.json"): "anthropic-message-tool-use.json",
    ("/v1/messages", "tools.stream"): "anthropic-stream-tool-use.sse",
}
# What each API rejects: a request lacking these is answered with the recorded 400.
REQUIRED = {"/v1/chat/completions": ("messages",), "/v1/responses": ("input",),
            "/v1/messages": ("messages", "max_tokens")}


@dataclass
class Replay:
    """The recordings served; ``overrides`` maps a recording name to the bytes to send."""

    overrides: dict[str, bytes] = field(default_factory=dict)

    def body(self, name: str) -> bytes:
        if name in self.overrides:
            return self.overrides[name]
        if "#" in name:  # the `response` object of one event of a recorded stream
            recording, event_type = name.split("#")
            events = corpus.payloads(list(corpus.stream(recording).events))
            event = next(e for e in events if e["type"] == event_type)
            return json.dumps(event["response"]).encode()
        return corpus.find(name).read_bytes()

    def answer(self, path: str, request: dict[str, Any]) -> tuple[int, str, bytes]:
        if path not in REQUIRED:
            return 404, "application/json", json.dumps(
                {"error": {"message": f"Invalid URL (POST {path})", "type":
                           "invalid_request_error", "param": None, "code": None}}).encode()
        if any(key not in request for key in REQUIRED[path]):
            name = ANSWERS[(path, "error")]
            return corpus.status_from_name(corpus.find(name)), "application/json", \
                self.body(name)
        kind = "stream" if request.get("stream") else "json"
        content_type = "text/event-stream" if kind == "stream" else "application/json"
        if request.get("tools") and (path, f"tools.{kind}") in ANSWERS:
            kind = f"tools.{kind}"
        return 200, content_type, self.body(ANSWERS[(path, kind)])


class Answers(Protocol):
    """What ``serving`` serves: the status, content type and body for a POST (``request`` is the
    parsed JSON body, ``{}`` when it is not JSON)."""

    def answer(self, path: str, request: Any) -> tuple[int, str, bytes]: ...


def _handler(replay: Answers) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            length = int(self.headers.get("Content-Length") or 0)
            try:
                request = json.loads(self.rfile.read(length) or b"{}")
            except ValueError:
                request = {}
            status, content_type, body = replay.answer(self.path.split("?")[0], request)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            body = b'{"status": "ok"}' if self.path == "/health" else b'{"object": "list", ' \
                b'"data": [{"id": "gpt-replay", "object": "model", "created": 0, ' \
                b'"owned_by": "replay"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serving(replay: Answers) -> Iterator[str]:
    """Serve ``replay`` (a ``Replay``, or any other ``Answers``) on a free loopback port;
    yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(replay))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
