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

from mlxcel_conformance.target import ReferenceServer

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "fixtures" / "models" / "qwen3-tiny"


@pytest.fixture(scope="module")
def plain_server() -> Iterator[str]:
    server = ReferenceServer(model=str(MODEL), api_key=None, extra_args=(), encoders=False)
    try:
        yield server.start().base_url
    finally:
        server.stop()


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
