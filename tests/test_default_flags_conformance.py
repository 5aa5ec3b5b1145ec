"""The suite against the reference server started as a user starts it, with no optional flags
(`mlxcel-server --model ...`): the routes that need a flag (`--embedding-model`,
`--rerank-model`, `--metrics`) answer as documented without it (501 naming the flag, /metrics
absent), so their features are UNSUPPORTED, never FAIL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from _conformance_run import MODELS, serve, suite_verdicts

MODEL = MODELS / "qwen3-tiny"


@pytest.fixture(scope="module")
def plain_server() -> Iterator[str]:
    yield from serve(model=str(MODEL), api_key=None, extra_args=(), encoders=False)


def test_optional_routes_are_unsupported_not_failed(plain_server: str, tmp_path: Path) -> None:
    verdicts = suite_verdicts(
        plain_server, "test_embeddings or test_metrics_counters_exact or (golden and embeddings)",
        tmp_path / "report", families=("embeddings", "observability"))
    embeddings = {f: v for f, v in verdicts.items()
                  if f.startswith(("embeddings.", "rerank.", "golden.embeddings."))}
    assert len(embeddings) >= 14
    assert set(embeddings.values()) == {"UNSUPPORTED"}, embeddings
    assert verdicts["observability.metrics_exact"] == "UNSUPPORTED"
