"""``mlxcel-server`` starts or says why in one line (issue 40, item 4): the real command run as
a subprocess, each mistake an operator makes in the first minutes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlxcel.startup import looks_like_hub_id

ROOT = Path(__file__).resolve().parents[2]
# What the engine logs once it starts loading: a startup error must come before any of it.
LOADING = ("CPU kernels", "loaded", "decoding on")


def run_server(*args: str, env: dict[str, str] | None = None, prelude: str = "",
               timeout: float = 120) -> tuple[subprocess.CompletedProcess[str], float]:
    """``mlxcel-server ARGS`` (as the console script runs it); ``prelude`` runs first in the
    same interpreter (to make a package unimportable)."""
    code = f"{prelude}\nfrom mlxcel.cli import main\nmain({list(args)!r})"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})
    return done, time.monotonic() - started


def one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    """The only line on stderr that is not uvicorn's or the engine's INFO log."""
    lines = [line for line in done.stderr.splitlines()
             if not line.startswith("INFO:") and " INFO " not in line]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("mlxcel-server: error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


def test_a_missing_model_path_says_so(tmp_path: Path) -> None:
    done, _ = run_server("--model", str(tmp_path / "nonexistent"))
    assert done.returncode == 2
    line = one_line_error(done)
    assert "no such file or directory" in line and "HFValidationError" not in line


@pytest.mark.parametrize("flag", ["--draft-model", "--embedding-model", "--rerank-model"])
def test_every_model_flag_is_checked(flag: str) -> None:
    done, _ = run_server(flag, "./no/such/model")
    assert done.returncode == 2
    assert f"{flag} ./no/such/model: no such file or directory" in one_line_error(done)


def test_a_taken_port_fails_before_the_model_loads(taken_port: int) -> None:
    done, elapsed = run_server("--port", str(taken_port))
    assert done.returncode == 2
    assert "address already in use" in one_line_error(done)
    assert not any(mark in done.stderr for mark in LOADING)
    # before the model and its libraries load: well under a second on an idle machine; this
    # bound leaves room for a busy CI host
    assert elapsed < 10


def test_an_address_not_on_this_host_fails_at_once() -> None:
    done, _ = run_server("--host", "192.0.2.1", "--port", "8080")  # TEST-NET-1, RFC 5737
    assert done.returncode == 2
    assert "cannot listen on 192.0.2.1:8080" in one_line_error(done)


def test_debug_logging_shows_the_traceback(tmp_path: Path) -> None:
    done, _ = run_server("--model", str(tmp_path / "nonexistent"), "--log-level", "debug")
    assert done.returncode == 2
    assert "Traceback" in done.stderr and "no such file or directory" in done.stderr


def test_a_directory_that_is_no_model_fails_in_one_line(tmp_path: Path) -> None:
    done, _ = run_server("--model", str(tmp_path), "--port", "0")
    assert done.returncode == 1
    line = one_line_error(done)
    assert line.startswith("mlxcel-server: error: model failed to load: ") and "config.json" in line


def test_a_hub_id_is_tried_on_the_hub() -> None:
    done, _ = run_server("--model", "nobody/no-such-model", "--port", "0",
                         env={"HF_HUB_OFFLINE": "1"})
    assert done.returncode == 1
    line = one_line_error(done)
    assert "model failed to load" in line and "no such file or directory" not in line


@pytest.mark.parametrize(("value", "hub"), [
    ("owner/name", True), ("Qwen/Qwen3-0.6B", True), ("mlx-community/x.y_z", True),
    ("/abs/path", False), ("./rel/x", False), ("a/b/c", False), ("owner/na me", False),
    ("-owner/name", False), ("owner/name.", False), ("name", False), ("~/models/x", False),
])
def test_what_looks_like_a_hub_id(value: str, hub: bool) -> None:
    assert looks_like_hub_id(value) is hub


def test_a_vision_checkpoint_without_the_extra_names_it(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "x", "vision_config": {}}))
    done, _ = run_server("--model", str(tmp_path), "--port", "0",
                         prelude="import sys; sys.modules['mlx_vlm'] = None")
    assert done.returncode == 2
    assert "pip install 'mlxcel[vision]'" in one_line_error(done)


def test_an_encoder_without_the_extra_names_it(tmp_path: Path) -> None:
    done, _ = run_server("--embedding-model", str(tmp_path), "--port", "0",
                         prelude="import sys; sys.modules['mlx_embeddings'] = None")
    assert done.returncode == 2
    assert "pip install 'mlxcel[embeddings]'" in one_line_error(done)


def test_a_backend_that_fails_to_load_at_startup_is_one_line(tmp_path: Path) -> None:
    """An encoder loads in the app's startup (its router's lifespan), after the text model."""
    done, _ = run_server("--embedding-model", str(tmp_path), "--port", "0")
    assert done.returncode == 1
    # uvicorn's traceback and its "Application startup failed" give way to the one line
    assert "Traceback" not in done.stderr and "Application startup failed" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("mlxcel-server:")]
    assert len(errors) == 1 and "config.json" in errors[0]
    assert errors[0].startswith("mlxcel-server: error: startup failed: ")
