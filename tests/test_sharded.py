"""Sharded serving (``nox -s sharded``): ``mlxcel-server`` under ``mlx.launch -n 2 --backend
ring`` on loopback, the fixture model tensor-sharded across the two ranks, rank 0 serving HTTP.

Greedy output must be token-for-token the single-process server's on every scripted
conversation, and the suite's chat checks must pass against the sharded server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from mlxcel_conformance.target import ReferenceServer, free_port, wait_healthy

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
SCRIPTED = json.loads((ROOT / "fixtures" / "scripted.json").read_text())


@pytest.fixture(scope="module")
def sharded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    launcher = shutil.which("mlx.launch", path=str(Path(sys.executable).parent))
    server = shutil.which("mlxcel-server", path=str(Path(sys.executable).parent))
    assert launcher and server, "mlx.launch and mlxcel-server must be installed next to python"
    port, ring_port = free_port(), free_port()
    log = tmp_path_factory.mktemp("sharded") / "server.log"
    # the script path must be absolute and --python given (mlx.launch runs it on every rank)
    cmd = [launcher, "-n", "2", "--backend", "ring", "--starting-port", str(ring_port),
           "--python", sys.executable, str(Path(server).resolve()), "--port", str(port),
           "--log-level", "warning"]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_healthy(url, proc, 300, "sharded server", lambda: log.read_text()[-4000:]), (
            f"sharded server not healthy in 300 s:\n{log.read_text()[-4000:]}")
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # the launcher and both ranks: our own group
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def single_url() -> Iterator[str]:
    server = ReferenceServer(api_key=None)
    target = server.start()
    try:
        yield target.base_url
    finally:
        server.stop()


def _greedy(url: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    reply = httpx.post(f"{url}/v1/chat/completions", timeout=300, json={
        "messages": messages, "max_tokens": 64, "temperature": 0, "logprobs": True})
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    return body


@pytest.mark.parametrize("case", SCRIPTED, ids=[case["name"] for case in SCRIPTED])
def test_sharded_greedy_equals_single_process(
    case: dict[str, Any], sharded_url: str, single_url: str
) -> None:
    sharded, single = _greedy(sharded_url, case["messages"]), _greedy(single_url, case["messages"])
    choice, expected = sharded["choices"][0], single["choices"][0]
    tokens = [entry["token"] for entry in choice["logprobs"]["content"]]
    assert tokens == [entry["token"] for entry in expected["logprobs"]["content"]]
    assert choice["message"] == expected["message"]
    assert choice["finish_reason"] == expected["finish_reason"]
    # the single process reuses its prompt cache (cached_tokens); sharded serving has none
    counts = ("prompt_tokens", "completion_tokens", "total_tokens")
    assert {k: sharded["usage"][k] for k in counts} == {k: single["usage"][k] for k in counts}
    assert sharded["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
    pairs = zip(choice["logprobs"]["content"], expected["logprobs"]["content"], strict=True)
    for got, want in pairs:
        assert got["logprob"] == pytest.approx(want["logprob"], abs=1e-3)


def test_suite_chat_checks_pass_against_the_sharded_server(
    sharded_url: str, tmp_path: Path
) -> None:
    conformance = shutil.which("mlxcel-conformance", path=str(Path(sys.executable).parent))
    assert conformance, "mlxcel-conformance must be installed next to python"
    # goldens exact: the sharded server must reproduce the recorded tokens, not just shapes
    proc = subprocess.run(
        [conformance, "--base-url", sharded_url, "--profile", "mlxcel", "--families", "chat",
         "--goldens", "exact", "--report", str(tmp_path)],
        capture_output=True, text=True, timeout=1200,
    )
    report = json.loads((tmp_path / "conformance.json").read_text())
    counts = report["summary"]["counts"]
    assert proc.returncode == 0 and counts["FAIL"] == 0 and counts["ERROR"] == 0, (
        proc.stdout[-6000:])
    assert counts["PASS"] >= 20
