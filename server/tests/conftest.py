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


@pytest.fixture(autouse=True, scope="session")
def _store_in_a_scratch_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The Responses store's default file lives in the user's data directory: tests (and the
    servers they start) keep theirs in a scratch one instead of the developer's."""
    import os

    saved = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("xdg-data"))
    yield
    if saved is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = saved
