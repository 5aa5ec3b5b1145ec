"""The servers a benchmark runs side by side, all up at once: how each is started on a fixture
model, what every request to it carries, and its process (for CPU time and a log tail).

Every server gets as many slots as the highest concurrency level and no API key. MLX servers
(mlxcel, mlx_lm.server) get the same environment, including ``LD_PRELOAD`` of an optimized BLAS
when one is given (``--blas``; the ``mlx[cpu]`` wheel's reference BLAS is ~10x slower on matrix
products, see benchmarks/README.md). llama-server gets the fixture converted to GGUF (F32, the
same weights) by ``mlxcel_conformance.peers.gguf_convert``, cached outside the repository.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from .cpu_time import tree_cpu_s
from .fixture import mlx_lm_dir
from .run import free_port

KNOWN = ("mlxcel", "mlx-lm", "llama-server", "vllm-mlx")
# Variants: a server started with extra flags, benchmarked beside its default:
# llama-server@t1 is llama-server on one thread.
VARIANTS = {"llama-server@t1": ["-t", "1"]}
# Fields that make a server generate exactly max_tokens (no stop at end-of-sequence).
FIXED_LENGTH = {"mlxcel": {"ignore_eos": True}, "llama-server": {"ignore_eos": True},
                "vllm-mlx": {"ignore_eos": True}}


@dataclass
class ServerSpec:
    name: str
    command: list[str]
    env: dict[str, str]
    fields: dict[str, Any]  # added to every request body
    ready_path: str = "/health"
    startup_timeout: float = 180.0


@dataclass
class RunningServer:
    spec: ServerSpec
    port: int
    log_path: Path
    process: subprocess.Popen[bytes]
    version: str = "unknown"
    notes: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    def alive(self) -> bool:
        return self.process.poll() is None

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server process and its children so far (those
        still running too: mlxcel's decode lanes)."""
        try:
            return tree_cpu_s(self.process.pid)
        except (OSError, ValueError, IndexError):
            return float("nan")

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


def gguf_for(model: Path, cache: Path) -> Path:
    """The fixture as GGUF for llama-server, converted once into ``cache``."""
    from mlxcel_conformance.peers.gguf_convert import convert

    if model.suffix == ".gguf":  # the real model: llama-server serves the file itself
        return model
    target = cache / f"{model.name}-f32.gguf"
    source = model / "model.safetensors"
    if target.exists() and (not source.exists()
                            or target.stat().st_mtime >= source.stat().st_mtime):
        return target
    tmp = target.with_suffix(".tmp.gguf")
    convert(model, tmp)
    tmp.replace(target)
    return target


def kind_of(name: str) -> str:
    """``llama-server@t1`` is a llama-server labelled ``t1``, ``mlxcel+base`` an mlxcel (two
    builds or settings of one server can run side by side)."""
    return name.replace("+", "@", 1).split("@", 1)[0]


def spec_for(name: str, model: Path, port: int, slots: int, *, blas: str | None,
             executable: str | None, gguf_cache: Path, extra_args: list[str],
             extra_env: dict[str, str] | None = None, slot_ctx: int = 2048) -> ServerSpec:
    """How ``name`` is started on ``model`` with ``slots`` concurrent sequences of
    ``slot_ctx`` tokens each (prompt and reply; mlx_lm.server has no such limit)."""
    kind = kind_of(name)
    extra_args = VARIANTS.get(name, []) + extra_args
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(extra_env or {}))
    for variable, value in (extra_env or {}).items():
        if not value:  # NAME= removes the variable (e.g. this machine's OPENBLAS_CORETYPE)
            env.pop(variable, None)
    mlx_env = dict(env, LD_PRELOAD=blas) if blas else env
    host = ["--host", "127.0.0.1", "--port", str(port)]
    fields = dict(FIXED_LENGTH.get(kind, {}))
    if kind in ("mlx-lm", "vllm-mlx"):  # a GGUF file as the mlx-lm directory of its weights
        model = mlx_lm_dir(model)
    if kind == "mlxcel":
        cmd = [sys.executable, "-m", "mlxcel", "--model", str(model), *host,
               "--parallel", str(slots), "--max-queue", str(16 * slots), "--log-level", "warning",
               "--ctx-size", str(slot_ctx * slots)]
        return ServerSpec(name, cmd + extra_args, mlx_env, fields)
    if kind == "mlx-lm":
        cmd = [sys.executable, "-m", "mlx_lm.server", "--model", str(model), *host,
               "--decode-concurrency", str(max(slots, 32)),
               "--prompt-concurrency", str(max(slots, 8)), "--log-level", "WARNING"]
        return ServerSpec(name, cmd + extra_args, mlx_env, fields, ready_path="/v1/models")
    if kind == "llama-server":
        if not executable:
            raise ValueError("llama-server needs --llama-server PATH")
        gguf = gguf_for(model, gguf_cache)
        # -c is shared by the slots (prompt + reply each); the same template the MLX servers
        # render (--jinja), no web UI.
        cmd = [executable, "-m", str(gguf), *host, "--jinja", "--no-webui",
               "-np", str(slots), "-c", str(slot_ctx * slots)]
        return ServerSpec(name, cmd + extra_args, env, fields)
    if kind == "vllm-mlx":
        if not executable:
            raise ValueError("vllm-mlx needs --vllm-mlx PATH")
        cmd = [executable, "serve", str(model), "--port", str(port), "--continuous-batching",
               "--served-model-name", model.name]
        return ServerSpec(name, cmd + extra_args, env, dict(fields, model=model.name),
                          startup_timeout=300.0)
    raise ValueError(f"unknown server {name!r}; known: {', '.join(KNOWN)}")


def public_command(command: list[str]) -> list[str]:
    """``command`` as published, without this machine's paths: the interpreter is ``python``,
    paths in the repository are relative, the home directory is ``~``, and any other
    absolute path outside ``/usr`` is reduced to its file name (a llama-server binary)."""
    repo = str(Path(__file__).resolve().parents[1]) + os.sep
    home = str(Path.home())
    out = []
    for arg in command:
        if arg == sys.executable:
            arg = "python"
        elif arg.startswith(repo):
            arg = arg[len(repo):]
        elif arg.startswith(home + os.sep):
            arg = "~" + arg[len(home):]
        elif arg.startswith(os.sep) and not arg.startswith("/usr/"):
            arg = Path(arg).name
        out.append(arg)
    return out


def version_of(spec: ServerSpec) -> str:
    probes = {
        "mlxcel": [sys.executable, "-c", "import mlxcel; print('mlxcel', mlxcel.__version__)"],
        "mlx-lm": [sys.executable, "-c", "import mlx_lm; print('mlx-lm', mlx_lm.__version__)"],
        "llama-server": [spec.command[0], "--version"],
    }
    probe = probes.get(kind_of(spec.name))
    if probe is None:
        return "unknown"
    try:
        done = subprocess.run(probe, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    lines = (done.stdout + done.stderr).strip().splitlines()
    return next((ln for ln in lines if "version" in ln.lower() or ln.startswith(spec.name)),
                lines[0] if lines else "unknown")


def wait_ready(server: RunningServer) -> None:
    base = f"http://127.0.0.1:{server.port}"
    deadline = time.monotonic() + server.spec.startup_timeout
    while time.monotonic() < deadline:
        if not server.alive():
            raise RuntimeError(f"{server.name} exited ({server.process.returncode}):\n"
                               f"{server.log_tail()}")
        try:
            if httpx.get(base + server.spec.ready_path, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"{server.name} not ready within {server.spec.startup_timeout:.0f} s:\n"
                       f"{server.log_tail()}")


def start(spec: ServerSpec, port: int, logdir: Path) -> RunningServer:
    logdir.mkdir(parents=True, exist_ok=True)
    log_path = logdir / f"{spec.name}-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(spec.command, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=spec.env,
                                   start_new_session=True)
    server = RunningServer(spec, port, log_path, process, version=version_of(spec))
    wait_ready(server)
    return server


def start_all(names: list[str], model: Path, slots: int, *, blas: str | None,
              executables: dict[str, str | None], gguf_cache: Path, logdir: Path,
              extra_args: dict[str, list[str]], extra_env: dict[str, dict[str, str]],
              slot_ctx: int = 2048) -> list[RunningServer]:
    """Start every server (stopping those already started if one fails)."""
    running: list[RunningServer] = []
    try:
        for name in names:
            port = free_port()
            spec = spec_for(name, model, port, slots, blas=blas,
                            executable=executables.get(kind_of(name)), gguf_cache=gguf_cache,
                            extra_args=extra_args.get(name, []),
                            extra_env=extra_env.get(name), slot_ctx=slot_ctx)
            print(f"[{name}] {' '.join(spec.command)}", flush=True)
            running.append(start(spec, port, logdir))
    except BaseException:
        for server in running:
            server.stop()
        raise
    return running
