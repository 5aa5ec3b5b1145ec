"""``LoadedModel.decode`` (what streaming detokenization calls twice per generated token) goes
straight to the Rust tokenizer where transformers' wrapper would not change the text, and is
the wrapper's decode, character for character, on every fixture's tokenizer."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from mlxcel.engine.loaded_model import load_model

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
CHAT_FIXTURES = ["qwen3-tiny", "llama3-tiny", "mistral-tiny", "gemma4-tiny", "kimi-k2-tiny",
                 "gpt-oss-tiny", "glm47-tiny"]


@pytest.mark.parametrize("name", CHAT_FIXTURES)
def test_decode_is_the_tokenizer_s_on_random_ids(name: str) -> None:
    model = load_model(str(MODELS / name))
    vocab = len(model.tokenizer.get_vocab())
    rng = random.Random(0)
    for _ in range(200):
        ids = [rng.randrange(vocab) for _ in range(rng.randrange(1, 12))]
        assert model.decode(ids) == model.tokenizer.decode(ids)


def test_the_rust_decoder_is_used_only_without_space_clean_up() -> None:
    model = load_model(str(MODELS / "qwen3-tiny"))
    assert model._decode != model.tokenizer.decode  # the backend's own decode
    again = load_model(str(MODELS / "qwen3-tiny"))
    again.tokenizer._tokenizer.clean_up_tokenization_spaces = True
    assert again._decode == again.tokenizer.decode
