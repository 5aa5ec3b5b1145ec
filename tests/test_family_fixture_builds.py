"""The committed tool-call family fixtures (``fixtures/build_family_fixtures.py``): each is small
and complete, and (``-m slow``, ``nox -s fixtures``) rebuilds bit for bit."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "fixtures" / "models"
MAX_BYTES = 1536 * 1024  # 1.5 MiB per fixture
FILES = {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
         "tokenizer_config.json"}


def _specs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("family_specs",
                                                  ROOT / "fixtures" / "family_specs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("family_specs", module)
    spec.loader.exec_module(module)
    return module


FAMILIES = _specs().FAMILIES


@pytest.mark.parametrize("fmt", sorted(FAMILIES))
def test_fixture_is_committed_small_and_complete(fmt: str) -> None:
    directory = MODELS / FAMILIES[fmt].name
    assert {p.name for p in directory.iterdir()} == FILES
    assert sum(p.stat().st_size for p in directory.iterdir()) < MAX_BYTES


def test_every_tool_format_has_a_fixture() -> None:
    from mlxcel.chat.tool_formats import FORMAT_NAMES

    # hermes is served by qwen3-tiny (fixtures/build_fixtures.py)
    assert set(FORMAT_NAMES) - set(FAMILIES) == {"hermes"}


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["llama3"])
def test_rebuild_is_bit_identical(fmt: str) -> None:
    """One family rebuilt with ``--check`` (about a minute); ``nox -s fixtures`` checks all."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "fixtures" / "build_family_fixtures.py"), "--check", fmt],
        capture_output=True, text=True, timeout=900, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "identical" in result.stdout
