"""Shared fixtures for the server's unit tests: the committed tiny model and its tokenizer, and
the generated Kokoro checkpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_MODEL = ROOT / "fixtures" / "models" / "qwen3-tiny"


@pytest.fixture(scope="session")
def fixture_model() -> str:
    return str(FIXTURE_MODEL)


@pytest.fixture(scope="session")
def tokenizer() -> Any:
    """The fixture's mlx-lm ``TokenizerWrapper`` (what the engine decodes with)."""
    from mlx_lm.tokenizer_utils import load

    return load(FIXTURE_MODEL)


@pytest.fixture(scope="session")
def kokoro_checkpoint() -> Path:
    """The tiny random Kokoro checkpoint, built into the fixture cache on first use (too big to
    commit: ``fixtures/build_kokoro_fixture.py``)."""
    pytest.importorskip("misaki")
    from fixtures.build_kokoro_fixture import ensure_fixture

    return ensure_fixture()
