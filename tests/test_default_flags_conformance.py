"""The suite against the reference server started as a user starts it, with no optional flags
(`mlxcel-server --model ...`): the routes that need a flag (`--embedding-model`,
`--rerank-model`, `--metrics`) answer as documented without it (501 naming the flag, /metrics
absent), so their features are UNSUPPORTED, never FAIL."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlxcel_conformance.target import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "fixtures" / "models" / "qwen3-tiny"


@pytest.fixture(scope="module")
def plain_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("plain") / "server.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "mlxcel", "--port", str(port), "--model", str(MODEL)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_healthy(url, process, 120, "plain server", lambda: log.read_text()[-2000:])
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_optional_routes_are_unsupported_not_failed(plain_server: str, tmp_path: Path) -> None:
    report = tmp_path / "report"
    run = subprocess.run(
        [sys.executable, "-m", "mlxcel_conformance", "--base-url", plain_server,
         "--profile", "mlxcel", "-k", "test_embeddings or test_metrics_counters_exact or "
         "(golden and embeddings)", "--report", str(report)],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    records = json.loads((report / "conformance.json").read_text())["records"]
    verdicts = {r["feature"]: r["verdict"] for r in records if r["family"] in
                ("embeddings", "observability")}
    embeddings = {f: v for f, v in verdicts.items()
                  if f.startswith(("embeddings.", "rerank.", "golden.embeddings."))}
    assert len(embeddings) >= 14
    assert set(embeddings.values()) == {"UNSUPPORTED"}, embeddings
    assert verdicts["observability.metrics_exact"] == "UNSUPPORTED"
