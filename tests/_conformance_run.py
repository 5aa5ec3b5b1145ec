"""Shared by the tests that run the conformance suite against a reference server started with
some flags: start the server for a test module, run ``mlxcel-conformance -k ...`` against it,
and read the verdicts from its report."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Collection, Iterable, Iterator
from pathlib import Path
from typing import Any

import mlx.core as mx

from mlxcel_conformance.target import ReferenceServer

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "fixtures" / "models"
# The goldens were recorded on the CPU in float32; these fixtures are untrained, so Metal's
# float16 and kernels can flip their near-ties: exact replay on the CPU, shape on Metal.
GOLDENS_MODE = "shape" if mx.metal.is_available() else "exact"


def serve(**options: Any) -> Iterator[str]:
    """A reference server started with these ``ReferenceServer`` options: yields its base URL
    and stops it after (``yield from serve(...)`` in a module-scoped fixture)."""
    server = ReferenceServer(**options)
    try:
        yield server.start().base_url
    finally:
        server.stop()


def suite_verdicts(base_url: str, select: str, report: Path, *args: str,
                   families: Collection[str] | None = None) -> dict[str, str]:
    """Run the suite (mlxcel profile, ``-k select`` and any further ``args``) against
    ``base_url``, require it to exit 0, and return each feature's verdict (of ``families``
    only, where given) from the report written under ``report``."""
    run = subprocess.run(
        [sys.executable, "-m", "mlxcel_conformance", "--base-url", base_url,
         "--profile", "mlxcel", "-k", select, *args, "--report", str(report)],
        capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    records = json.loads((report / "conformance.json").read_text())["records"]
    return {r["feature"]: r["verdict"] for r in records
            if families is None or r["family"] in families}


def assert_verdicts(verdicts: dict[str, str], features: Iterable[str], verdict: str) -> None:
    """Every one of ``features`` has ``verdict`` (a missing one shows as None)."""
    features = set(features)
    assert {f: verdicts.get(f) for f in features} == dict.fromkeys(features, verdict)


def assert_no_failure(verdicts: dict[str, str]) -> None:
    assert "FAIL" not in verdicts.values() and "ERROR" not in verdicts.values()
