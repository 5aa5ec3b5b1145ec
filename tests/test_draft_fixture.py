"""The committed draft fixture ``fixtures/models/qwen3-tiny-draft``: tiny, tokenizing exactly
like ``qwen3-tiny``, greedy on the scripted replies, and rebuilt bit for bit by
``fixtures/build_draft_fixture.py``; and the LoRA adapter fixture ``fixtures/adapters``."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
DRAFT_DIR = FIXTURES / "models" / "qwen3-tiny-draft"
TARGET_DIR = FIXTURES / "models" / "qwen3-tiny"


def _import(name: str) -> ModuleType:
    sys.path.insert(0, str(FIXTURES))
    spec = importlib.util.spec_from_file_location(name, FIXTURES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bdf = _import("build_draft_fixture")


def test_small_and_shares_the_target_tokenizer() -> None:
    assert sum(p.stat().st_size for p in DRAFT_DIR.iterdir()) < 1024 * 1024
    for name in bdf.SHARED_FILES:
        assert (DRAFT_DIR / name).read_bytes() == (TARGET_DIR / name).read_bytes(), name
    draft = json.loads((DRAFT_DIR / "config.json").read_text(encoding="utf-8"))
    target = json.loads((TARGET_DIR / "config.json").read_text(encoding="utf-8"))
    assert draft["model_type"] == "qwen3" and draft["vocab_size"] == target["vocab_size"]
    assert draft["hidden_size"] < target["hidden_size"]
    assert draft == bdf.draft_config()


@pytest.mark.parametrize("name", ["hello", "long"])
def test_greedy_reproduces_scripted_reply(name: str) -> None:
    from mlx_lm import load

    base = bdf.base
    model, tokenizer = load(str(DRAFT_DIR))[:2]
    conversation: dict[str, Any] = next(c for c in base.load_scripted() if c["name"] == name)
    text, finish, _ = base.greedy_reply(model, tokenizer,
                                        base.render_prompt(tokenizer, conversation), 256)
    assert (text, finish) == (conversation["reply"], "stop")


@pytest.mark.slow
def test_rebuild_is_bit_identical(tmp_path: Path) -> None:
    bdf.build(tmp_path / "draft", log=False)
    assert bdf.base.dir_digests(tmp_path / "draft") == bdf.base.dir_digests(DRAFT_DIR)


# --- the LoRA adapter fixture (fixtures/build_adapter_fixture.py) ---------------------------

baf = _import("build_adapter_fixture")


def test_adapter_fixture_is_mlx_lm_s_layout() -> None:
    names = {p.name for p in baf.ADAPTER_DIR.iterdir()}
    assert names == {"adapter_config.json", "adapters.safetensors"}
    config = json.loads((baf.ADAPTER_DIR / "adapter_config.json").read_text(encoding="utf-8"))
    assert config == baf.ADAPTER_CONFIG
    assert sum(p.stat().st_size for p in baf.ADAPTER_DIR.iterdir()) < 64 * 1024


@pytest.mark.slow
def test_adapter_rebuild_is_bit_identical(tmp_path: Path) -> None:
    baf.build(tmp_path / "lora")
    assert baf._digests(tmp_path / "lora") == baf._digests(baf.ADAPTER_DIR)
