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


@pytest.fixture(autouse=True, scope="session")
def _testclient_host_is_local() -> Any:
    """Starlette's TestClient sends ``Host: testserver``: count it as a loopback name, as a
    server bound to 127.0.0.1 counts ``localhost`` (the guard refuses other Host names)."""
    from mlxcel.api import guard

    saved = guard.LOOPBACK_NAMES
    guard.LOOPBACK_NAMES = saved | {"testserver"}
    yield
    guard.LOOPBACK_NAMES = saved

