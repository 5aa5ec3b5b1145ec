"""The server under test: a URL given by the user, or the reference server started here.

Starting the reference server follows vLLM's ``RemoteOpenAIServer`` habit: a free port, poll
``/health`` until ready, and fail fast (``SetupError``) if the process exits first.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from .errors import SetupError
from .fixture_models import encoder_args

SELF_STARTED_API_KEY = "mlxcel-conformance-key"


@dataclass
class Target:
    """Where the suite sends requests and what it knows about that server."""

    base_url: str
    api_key: str | None = None
    model: str | None = None
    self_started: bool = False
    log_path: Path | None = None
    pid: int | None = None  # the server's process, when this machine started it
    # SIGKILL and the same command again (the self-started server): the new process id
    restart: Callable[[], int] | None = None

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def log_tail(self, lines: int = 40) -> str:
        if self.log_path is None or not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_healthy(base_url: str, process: subprocess.Popen[bytes], timeout: float, name: str,
                 log_tail: Callable[[], str], poll_s: float = 0.2) -> bool:
    """Poll ``GET /health`` until it answers 200 (True) or ``timeout`` passes (False); a process
    that exits first is a ``SetupError`` carrying its log tail (fail fast)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None:
            raise SetupError(f"{name} exited with code {code}:\n{log_tail()}")
        try:
            if httpx.get(f"{base_url}/health", timeout=2.0).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        time.sleep(poll_s)
    return False


@dataclass
class ReferenceServer:
    """``mlxcel-server`` in a subprocess on a free port; with ``audio_model`` the audio-only
    server (a Whisper or Kokoro checkpoint, no text or encoder models); with ``image_model`` a
    Z-Image checkpoint served beside the text model."""

    model: str | None = None
    audio_model: str | None = None
    image_model: str | None = None
    api_key: str | None = SELF_STARTED_API_KEY
    # /metrics exists only with --metrics; the suite checks it on the reference server.
    extra_args: Sequence[str] = ("--metrics",)
    # the embedding and rerank fixtures (False: the routes answer their 501)
    encoders: bool = True
    # where the fixture models are (None: fixture_models' search order)
    fixtures: Path | None = None
    startup_timeout: float = 300.0  # a real model (a GGUF converted at load) on a busy CPU
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "mlxcel", "--host", "127.0.0.1", "--port", str(self.port)]
        if self.api_key:
            cmd += ["--api-key", self.api_key]
        if self.audio_model:
            return cmd + ["--audio-model", self.audio_model] + list(self.extra_args)
        if self.model:
            cmd += ["--model", self.model]
        if self.image_model:
            cmd += ["--image-model", self.image_model]
        encoders = encoder_args(self.fixtures) if self.encoders else []
        return cmd + encoders + list(self.extra_args)

    def start(self) -> Target:
        fd, name = tempfile.mkstemp(prefix="mlxcel-server-", suffix=".log")
        os.close(fd)
        self.log_path = Path(name)
        log = self.log_path.open("wb")
        try:
            self.process = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
        except OSError as exc:
            raise SetupError(f"could not start the reference server: {exc}") from exc
        finally:
            log.close()
        self._wait_healthy()
        return Target(self.base_url, self.api_key, None, True, self.log_path,
                      self.process.pid if self.process else None, self.restart_hard)

    def restart_hard(self) -> int:
        """SIGKILL the server (nothing flushed, no shutdown hook) and start it again on the same
        port; the new process id."""
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=10)
        target = self.start()
        assert target.pid is not None
        return target.pid

    def _wait_healthy(self) -> None:
        assert self.process is not None

        def tail() -> str:
            return self.log_path.read_text(errors="replace")[-3000:] if self.log_path else ""

        if not wait_healthy(self.base_url, self.process, self.startup_timeout,
                            "reference server", tail):
            self.stop()
            raise SetupError(f"reference server not healthy within {self.startup_timeout:.0f} s")

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
