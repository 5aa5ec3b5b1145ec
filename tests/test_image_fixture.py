"""The committed Z-Image fixture ``fixtures/models/zimage-tiny``: small, a diffusers layout whose
configs size the parts, and rebuilt byte for byte by ``fixtures/build_image_fixture.py``."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("mflux")

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "models" / "zimage-tiny"


def _builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "build_image_fixture", ROOT / "fixtures" / "build_image_fixture.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_small_with_a_config_per_part() -> None:
    files = [f for f in FIXTURE.rglob("*") if f.is_file()]
    assert sum(f.stat().st_size for f in files) < 3 * 1024 * 1024
    for part in ("transformer", "text_encoder", "vae"):
        assert (FIXTURE / part / "config.json").is_file()
        assert (FIXTURE / part / "model.safetensors").is_file()
    assert json.loads((FIXTURE / "model_index.json").read_text())["_class_name"] == \
        "ZImagePipeline"


def test_rebuild_is_byte_identical(tmp_path: Path) -> None:
    builder = _builder()
    builder.build(tmp_path / "zimage-tiny")
    assert builder.files(tmp_path / "zimage-tiny") == builder.files(FIXTURE)
