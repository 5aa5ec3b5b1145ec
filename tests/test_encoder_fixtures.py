"""The committed encoder fixtures: small, complete, and loadable as what they claim to be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 3 * 1024 * 1024


@pytest.mark.parametrize(("name", "architecture"), [
    ("bert-tiny-embed", "BertModel"),
    ("bert-tiny-rerank", "BertForSequenceClassification"),
])
def test_encoder_fixture(name: str, architecture: str) -> None:
    directory = ROOT / "fixtures" / "models" / name
    files = [p for p in directory.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < MAX_BYTES
    names = {p.name for p in files}
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} <= names
    config = json.loads((directory / "config.json").read_text())
    assert config["model_type"] == "bert" and config["architectures"] == [architecture]


def test_whisper_fixture_is_small_and_loads_as_mlx_whisper() -> None:
    pytest.importorskip("mlx_whisper")
    from mlx_whisper.load_models import load_model

    directory = ROOT / "fixtures" / "models" / "whisper-tiny-random"
    files = [p for p in directory.iterdir() if p.is_file()]
    assert {p.name for p in files} == {"config.json", "weights.safetensors"}
    assert sum(p.stat().st_size for p in files) < MAX_BYTES
    model = load_model(str(directory))
    assert model.is_multilingual and model.dims.n_text_layer == 1
