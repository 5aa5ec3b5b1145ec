"""``fixtures/build_kokoro_fixture.py``: the generated Kokoro checkpoint is reproducible, lives
in the cache the environment names, and holds what the speech tests rely on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mlx_audio")

from fixtures.build_kokoro_fixture import (  # noqa: E402
    build,
    digest,
    ensure_fixture,
    fixture_dir,
)


def test_a_second_build_gives_the_same_bytes(tmp_path: Path) -> None:
    cached = ensure_fixture()
    build(tmp_path / "again")
    assert digest(tmp_path / "again") == digest(cached)


def test_the_checkpoint_has_english_and_french_voices() -> None:
    checkpoint = ensure_fixture()
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["model_type"] == "kokoro" and config["sample_rate"] == 24_000
    voices = sorted(p.stem for p in (checkpoint / "voices").glob("*.safetensors"))
    assert voices == ["af_heart", "bf_emma", "ff_siwis"]


def test_the_cache_directory_follows_the_environment(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLXCEL_FIXTURE_CACHE", str(tmp_path))
    assert fixture_dir().parent == tmp_path and fixture_dir().name.startswith("kokoro-tiny-")
