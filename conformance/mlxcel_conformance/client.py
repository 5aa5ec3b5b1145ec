"""The suite's HTTP client: plain JSON calls and whole SSE streams, with bounded time."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from .checks.registry import check, fail
from .checks.verdict_policy import VerdictClass
from .defects import refusal
from .errors import Severity
from .target import Target

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)


@dataclass
class StreamResult:
    status: int
    headers: httpx.Headers
    text: str


class ReconnectingTransport(httpx.HTTPTransport):
    """A request the server never answered because it closed the persistent connection the
    request went out on is sent once more, on a new connection: RFC 9112, 9.6 lets a server
    close a persistent connection at any time, and clients retry (llama-server sometimes closes
    one right after a stream; uvicorn resets one idle past its keep-alive timeout as the next
    request arrives). Both happen before any response header was read. A server that drops
    the request itself drops it again."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        try:
            return super().handle_request(request)
        except httpx.RemoteProtocolError as exc:
            if "without sending a response" not in str(exc):
                raise
        except httpx.ReadError as exc:
            if "reset" not in str(exc).lower():
                raise
        return super().handle_request(request)


class SuiteClient:
    """Thin wrapper over ``httpx.Client`` bound to the target (auth header included)."""

    def __init__(self, target: Target, timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> None:
        self.target = target
        self.http = httpx.Client(
            base_url=target.base_url, headers=target.auth_headers, timeout=timeout,
            transport=ReconnectingTransport(),
        )
        self._probes: dict[str, bool] = {}

    def probe(self, name: str, ask: Callable[[], bool]) -> bool:
        """Whether the target has a capability (an audio model, an embedding model...): ``ask``
        runs once per client, later calls return its answer."""
        if name not in self._probes:
            self._probes[name] = ask()
        return self._probes[name]

    def close(self) -> None:
        self.http.close()

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.http.get(path, **kwargs)

    def post(self, path: str, payload: Any = None, **kwargs: Any) -> httpx.Response:
        if payload is not None:
            kwargs["json"] = payload
        return self.http.post(path, **kwargs)

    def post_raw(self, path: str, content: bytes, content_type: str = "application/json",
                 **kwargs: Any) -> httpx.Response:
        headers = {"Content-Type": content_type, **kwargs.pop("headers", {})}
        return self.http.post(path, content=content, headers=headers, **kwargs)

    def stream(self, path: str, payload: Any) -> StreamResult:
        with self.http.stream("POST", path, json=payload) as response:
            text = response.read().decode("utf-8", errors="replace")
            return StreamResult(response.status_code, response.headers, text)

    def model_for_requests(self) -> str | None:
        """The ``model`` to send: --model, else the first id of /v1/models, else None (the
        field is then left out, which every local server reads as "the loaded model")."""
        if self.target.model:
            return self.target.model
        try:
            data = self.get("/v1/models").json()
            self.target.model = str(data["data"][0]["id"])
        except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
            return None
        return self.target.model


@check("json_body", severity=Severity.HIGH, description="A JSON response body parses as JSON")
def json_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        fail("json_body", f"response body is not JSON: {exc}",
             status=response.status_code, body=response.text[:2000],
             content_type=response.headers.get("content-type"))


@check("http_status", severity=Severity.HIGH, description="The response has the expected status",
       verdicts=frozenset({VerdictClass.FAIL, VerdictClass.UNSUPPORTED, VerdictClass.ERROR}))
def expect_status(response: httpx.Response | StreamResult, *expected: int) -> None:
    status = response.status_code if isinstance(response, httpx.Response) else response.status
    if status not in expected:
        body = response.text[:2000]
        fail("http_status", f"expected HTTP {' or '.join(map(str, expected))}, got {status}",
             status=status, body=body, defect=refusal(status, body))
