"""How each peer server is started on the fixture model, found by name in ``PEERS``.

A ``Peer`` says how to prepare its model (llama-server needs a GGUF file), which command serves
it on a port, which suite profile it claims and whether it takes an API key. ``PeerProcess``
runs one in a subprocess with its log in a file, waits for ``/health`` and fails fast when the
process exits first, like ``target.ReferenceServer``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import SetupError
from ..target import ReferenceServer, free_port, wait_healthy

PEER_API_KEY = "mlxcel-peers-key"


@dataclass
class Peer:
    """One server to compare: how it is started, and what it claims."""

    name: str
    profile: str
    description: str
    build_command: Callable[[Peer, int, Path], list[str]]
    api_key: str | None = None
    startup_timeout: float = 120.0
    executable: str | None = None  # llama-server's binary, vllm-mlx's venv python
    model_dir: Path = Path()
    # Appended to the command (the benchmark's slot count); a later flag overrides an earlier one.
    extra_args: list[str] = field(default_factory=list)

    # The text the server answers (in a 5xx) when a generation fails: with a platform error in
    # its log, such FAILs are ERROR/platform (peers/platform_log.py).
    generation_failure: str | None = None
    # What the model directory must become before the server loads it (llama-server: GGUF).
    convert_model: Callable[[Path, Path], Path] | None = None

    def prepare(self, workdir: Path) -> Path:
        """The model path the server is given."""
        if self.convert_model is None:
            return self.model_dir
        return self.convert_model(self.model_dir, workdir)

    def version(self) -> str:
        """A best-effort version string for the report (never fails the run)."""
        probes = {
            "mlx-lm": [sys.executable, "-c", "import mlx_lm; print('mlx-lm', mlx_lm.__version__)"],
            "mlxcel": [sys.executable, "-c", "import mlxcel; print('mlxcel', mlxcel.__version__)"],
            "llama-server": [str(self.executable), "--version"],
            "vllm-mlx": [str(Path(str(self.executable)).parent / "python"), "-m", "pip", "show",
                         "vllm-mlx"],
        }
        try:
            done = subprocess.run(probes[self.name], capture_output=True, text=True, timeout=30,
                                  check=False)
        except (OSError, KeyError, subprocess.TimeoutExpired) as exc:
            return f"unknown ({exc})"
        lines = (done.stdout + done.stderr).strip().splitlines()
        return next((ln for ln in lines if "version" in ln.lower() or ln.startswith(self.name)),
                    lines[0] if lines else "unknown")


def _mlxcel(peer: Peer, port: int, model: Path) -> list[str]:
    server = ReferenceServer(model=str(model), api_key=peer.api_key, port=port)
    return server.command()


def _mlx_lm(peer: Peer, port: int, model: Path) -> list[str]:
    return [sys.executable, "-m", "mlx_lm.server", "--model", str(model),
            "--host", "127.0.0.1", "--port", str(port)]


def _llama_server(peer: Peer, port: int, model: Path) -> list[str]:
    # --jinja: the model's own chat template (tool calls, <think>), as the reference renders it.
    cmd = [str(peer.executable), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--no-ui", "--jinja", "-c", "4096", "-np", "4"]
    return cmd + (["--api-key", peer.api_key] if peer.api_key else [])


def _to_gguf(model_dir: Path, workdir: Path) -> Path:
    from .gguf_convert import convert  # needs the `gguf` package (extra `peers`)

    return convert(model_dir, workdir / f"{model_dir.name}.gguf")


def _vllm_mlx(peer: Peer, port: int, model: Path) -> list[str]:
    # executable: the ``vllm-mlx`` script of its own venv (it pulls torch; never ours).
    # Tool calls and reasoning as vLLM documents them for a Qwen3 model: without the parsers
    # the server leaves tool-call and <think> markup in the content, claiming neither.
    cmd = [str(peer.executable), "serve", str(model), "--port", str(port),
           "--continuous-batching", "--served-model-name", model.name,
           "--enable-auto-tool-choice", "--tool-call-parser", "hermes",
           "--reasoning-parser", "qwen3"]
    return cmd + (["--api-key", peer.api_key] if peer.api_key else [])


PEERS: dict[str, Callable[[Path, str | None], Peer]] = {
    "mlxcel": lambda model, exe: Peer("mlxcel", "mlxcel", "the reference server", _mlxcel,
                                      api_key=PEER_API_KEY, model_dir=model),
    "mlx-lm": lambda model, exe: Peer("mlx-lm", "mlx-lm", "mlx_lm.server (PyPI mlx-lm)",
                                      _mlx_lm, model_dir=model),
    "llama-server": lambda model, exe: Peer("llama-server", "llama-server",
                                            "llama.cpp llama-server", _llama_server,
                                            api_key=PEER_API_KEY, executable=exe,
                                            model_dir=model, convert_model=_to_gguf),
    "vllm-mlx": lambda model, exe: Peer("vllm-mlx", "vllm-mlx", "vllm-mlx (its own venv)",
                                        _vllm_mlx, api_key=PEER_API_KEY, executable=exe,
                                        startup_timeout=300.0, model_dir=model,
                                        # vllm_mlx/server.py's answer to an error in a step
                                        generation_failure="Internal server error during "
                                        "generation"),
}


def make_peer(name: str, model_dir: Path, executable: str | None = None) -> Peer:
    try:
        factory = PEERS[name]
    except KeyError:
        raise SetupError(f"unknown peer {name!r}; known: {', '.join(PEERS)}") from None
    peer = factory(model_dir, executable)
    if name in ("llama-server", "vllm-mlx") and not executable:
        raise SetupError(f"peer {name} needs the path of its executable")
    return peer


@dataclass
class PeerProcess:
    """A started peer: its process, port, log, and how to tell whether it is still alive."""

    peer: Peer
    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    command: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.workdir / f"{self.peer.name}.log"

    def start(self) -> PeerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        model = self.peer.prepare(self.workdir)
        self.command = self.peer.build_command(self.peer, self.port, model) + self.peer.extra_args
        with self.log_path.open("wb") as log:
            try:
                # Own process group: stop() ends the server and anything it spawned, nothing else.
                self.process = subprocess.Popen(self.command, stdout=log, stderr=subprocess.STDOUT,
                                                stdin=subprocess.DEVNULL, start_new_session=True,
                                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
            except OSError as exc:
                raise SetupError(f"could not start {self.peer.name}: {exc}") from exc
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        assert self.process is not None
        if not wait_healthy(self.base_url, self.process, self.peer.startup_timeout,
                            self.peer.name, self.log_tail, poll_s=0.3):
            self.stop()
            raise SetupError(
                f"{self.peer.name} not healthy within {self.peer.startup_timeout:.0f} s")

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
