"""The committed VLM fixture (fixtures/models/qwen2-vl-tiny): small, complete, and its config,
tokenizer and processor settings agree (the model itself is exercised in server/tests)."""

from __future__ import annotations

import json
from pathlib import Path

from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
VLM = ROOT / "fixtures" / "models" / "qwen2-vl-tiny"
FILES = {"config.json", "generation_config.json", "model.safetensors",
         "preprocessor_config.json", "processor_config.json", "special_tokens_map.json",
         "tokenizer.json", "tokenizer_config.json", "video_preprocessor_config.json"}


def test_directory_is_small_and_complete() -> None:
    assert {p.name for p in VLM.iterdir()} == FILES
    assert sum(p.stat().st_size for p in VLM.iterdir()) < 3 * 1024 * 1024


def test_vision_tokens_match_the_config() -> None:
    config = json.loads((VLM / "config.json").read_text())
    tokenizer = Tokenizer.from_file(str(VLM / "tokenizer.json"))
    assert config["model_type"] == "qwen2_vl" and "vision_config" in config
    assert config["image_token_id"] == tokenizer.token_to_id("<|image_pad|>")
    assert config["video_token_id"] == tokenizer.token_to_id("<|video_pad|>")
    assert config["vision_start_token_id"] == tokenizer.token_to_id("<|vision_start|>")
    assert config["vocab_size"] == tokenizer.get_vocab_size(with_added_tokens=True)
    template = json.loads((VLM / "tokenizer_config.json").read_text())["chat_template"]
    assert template == (ROOT / "fixtures" / "templates" / "qwen2_vl.jinja").read_text()


def test_image_processor_keeps_images_small() -> None:
    processor = json.loads((VLM / "preprocessor_config.json").read_text())
    assert processor["max_pixels"] == 112 * 112
    assert processor["patch_size"] == 14 and processor["merge_size"] == 2
