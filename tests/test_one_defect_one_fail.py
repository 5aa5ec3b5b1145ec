"""One defect, one FAIL, end to end: the reference server behind a proxy that drops the
`logprobs` key from every chat choice (llama-server's gap; the OpenAI spec requires the key,
nullable). The body and parity features catch it; no behaviour feature (max_tokens, seeds,
stops, tools, reasoning, structured output) and no golden in shape mode re-reports it, and the
report counts one distinct defect."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from _conformance_run import MODELS, serve

MODEL = MODELS / "qwen3-tiny"
SHAPE_FEATURES = {"chat.json.body", "chat.n.json", "parity.chat.json",
                  "parity.chat.tool_calls.json"}
SELECT = "test_chat or test_field_parity or test_structured or test_golden"


def _strip_logprobs(body: bytes) -> bytes:
    try:
        data = json.loads(body)
    except ValueError:
        return body
    for choice in data.get("choices") or [] if isinstance(data, dict) else []:
        if isinstance(choice, dict):
            choice.pop("logprobs", None)
    return json.dumps(data).encode()


def _proxy(upstream: str) -> type[BaseHTTPRequestHandler]:
    client = httpx.Client(base_url=upstream, timeout=120)

    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            request = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "content-length", "connection")}
            answer = client.request(self.command, self.path, content=request, headers=headers)
            body = answer.content
            kind = answer.headers.get("content-type", "")
            if kind.startswith("application/json") and "chat/completions" in self.path:
                body = _strip_logprobs(body)
            self.send_response(answer.status_code)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = _forward  # noqa: N815 (http.server's names)

        def log_message(self, *args: Any) -> None:
            pass

    return Proxy


@pytest.fixture(scope="module")
def stripped() -> Iterator[str]:
    for upstream in serve(model=str(MODEL), api_key=None, extra_args=(), encoders=False):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _proxy(upstream))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()
            server.server_close()


def test_a_body_without_logprobs_fails_the_shape_features_only(stripped: str,
                                                               tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "mlxcel_conformance", "--base-url", stripped,
                    "--profile", "llama-server", "--goldens", "shape", "-k", SELECT,
                    "--report", str(tmp_path)], capture_output=True, timeout=600, check=False)
    report = json.loads((tmp_path / "conformance.json").read_text())
    ran = {r["feature"]: r for r in report["records"] if r["verdict"] != "UNSUPPORTED"}
    failed = {name for name, r in ran.items() if r["verdict"] != "PASS"}
    assert failed == SHAPE_FEATURES, {n: ran[n]["message"][:200] for n in failed}
    for name in SHAPE_FEATURES:
        assert ran[name]["checks"] == ["chat_completion_body"]
        assert "logprobs" in ran[name]["message"]
    # the behaviour features and goldens that read the same bodies ran and passed
    behaviour = {"chat.max_tokens", "chat.max_completion_tokens", "chat.tools.call",
                 "chat.stop.not_leaked", "chat.structured.json_schema", "golden.chat.hello",
                 "golden.chat.story_length", "golden.chat.tool_call", "chat.errors.loop_survives"}
    assert {name: ran[name]["verdict"] for name in behaviour} == dict.fromkeys(behaviour, "PASS")
    assert report["summary"]["distinct_defects"] == 1
    assert len(ran) > 40, sorted(ran)  # the chat family, the goldens, the parity features
