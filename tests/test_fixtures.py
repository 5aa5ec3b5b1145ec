"""Tests for the committed tiny fixture model ``fixtures/models/qwen3-tiny`` and its builder."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = ROOT / "fixtures" / "build_fixtures.py"
MODEL_DIR = ROOT / "fixtures" / "models" / "qwen3-tiny"
MAX_BYTES = 3 * 1024 * 1024


def _import_build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_fixtures", BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being created
    spec.loader.exec_module(module)
    return module


bf = _import_build_script()
SCRIPTED: list[dict[str, Any]] = bf.load_scripted()


@pytest.fixture(scope="module")
def loaded() -> tuple[Any, Any]:
    from mlx_lm import load

    loaded = load(str(MODEL_DIR))
    return loaded[0], loaded[1]


@pytest.fixture(scope="module")
def tokenizer(loaded: tuple[Any, Any]) -> Any:
    return loaded[1]


def test_directory_is_small_and_complete() -> None:
    names = {p.name for p in MODEL_DIR.iterdir()}
    assert names == {
        "config.json",
        "generation_config.json",
        "model.safetensors",
        "special_tokens_map.json",
        "tokenizer.json",
        "tokenizer_config.json",
    }
    assert sum(p.stat().st_size for p in MODEL_DIR.iterdir()) < MAX_BYTES


def test_loads_as_qwen3(loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    config = json.loads((MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    assert config["model_type"] == "qwen3" and model.model_type == "qwen3"
    assert type(model).__module__ == "mlx_lm.models.qwen3"
    assert config["vocab_size"] == len(tokenizer.get_vocab()) == bf.VOCAB_SIZE


def test_special_tokens(tokenizer: Any) -> None:
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    endoftext = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    assert tokenizer.eos_token == "<|im_end|>" and tokenizer.pad_token == "<|endoftext|>"
    assert tokenizer.bos_token is None
    assert set(tokenizer.eos_token_ids) == {im_end, endoftext}
    generation = json.loads((MODEL_DIR / "generation_config.json").read_text(encoding="utf-8"))
    assert generation["eos_token_id"] == [im_end, endoftext]
    decoder = tokenizer.added_tokens_decoder
    for content, special in bf.ADDED_TOKENS:
        (token_id,) = tokenizer.encode(content, add_special_tokens=False)
        assert decoder[token_id].content == content and decoder[token_id].special is special


def _greedy(loaded: tuple[Any, Any], conversation: dict[str, Any]) -> tuple[str, str, list[int]]:
    model, tokenizer = loaded
    prompt = bf.render_prompt(tokenizer, conversation)
    text, finish, tokens = bf.greedy_reply(model, tokenizer, prompt, 200)
    return str(text), str(finish), list(tokens)


@pytest.mark.parametrize("conversation", SCRIPTED, ids=[c["name"] for c in SCRIPTED])
def test_greedy_reproduces_scripted_reply(
    loaded: tuple[Any, Any], conversation: dict[str, Any]
) -> None:
    text, finish, tokens = _greedy(loaded, conversation)
    assert text == conversation["reply"]
    assert finish == "stop" and tokens[-1] == loaded[1].convert_tokens_to_ids("<|im_end|>")


def test_greedy_is_repeatable(loaded: tuple[Any, Any]) -> None:
    (long,) = [c for c in SCRIPTED if c["name"] == "long"]
    first, second = _greedy(loaded, long), _greedy(loaded, long)
    assert first[2] == second[2] and len(first[2]) > 50


def test_scripted_names_are_unique_and_cover_the_brief() -> None:
    names = [c["name"] for c in SCRIPTED]
    assert len(names) == len(set(names))
    assert {"hello", "think", "json", "tool_call", "tool_result", "unicode", "long"} <= set(names)


def test_chat_template_renders_all_roles_and_tools(tokenizer: Any) -> None:
    (tool_result,) = [c for c in SCRIPTED if c["name"] == "tool_result"]
    messages = [{"role": "system", "content": "Be brief."}, *tool_result["messages"]]
    text = tokenizer.apply_chat_template(
        messages, tools=tool_result["tools"], add_generation_prompt=True, tokenize=False
    )
    assert text.startswith("<|im_start|>system\nBe brief.\n\n# Tools\n")
    assert '<tools>\n{"type": "function", "function": {"name": "get_weather"' in text
    assert '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n' in text
    assert "<|im_start|>user\nWhat is the weather in Paris?<|im_end|>\n" in text
    assert (
        '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": '
        '{"city": "Paris"}}\n</tool_call><|im_end|>\n'
    ) in text
    assert (
        '<|im_start|>user\n<tool_response>\n{"temperature": 21, "sky": "sunny"}\n'
        "</tool_response><|im_end|>\n"
    ) in text
    assert text.endswith("<|im_start|>assistant\n")


def test_chat_template_thinking_rules(tokenizer: Any) -> None:
    messages = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "<think>\nold\n</think>\n\nA1"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "A2", "reasoning_content": "new"},
        {"role": "tool", "content": "result"},
    ]
    text = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False, enable_thinking=False
    )
    assert "old" not in text and "<|im_start|>assistant\nA1<|im_end|>" in text
    assert "<|im_start|>assistant\n<think>\nnew\n</think>\n\nA2<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    plain = tokenizer.apply_chat_template(messages[:1], add_generation_prompt=True, tokenize=False)
    assert plain == "<|im_start|>user\nQ1<|im_end|>\n<|im_start|>assistant\n"


@pytest.mark.parametrize("text", ["こんにちは 👋", '中文，한국어 ❤️ 🚀 — «ok» {"a": [1, 2]}\n'])
def test_tokenizer_round_trips_multibyte_text(tokenizer: Any, text: str) -> None:
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert tokenizer.decode(ids) == text


def test_tokenizer_build_is_deterministic(tmp_path: Path) -> None:
    first = bf.build_tokenizer(tmp_path / "a").read_bytes()
    second = bf.build_tokenizer(tmp_path / "b").read_bytes()
    assert first == second
    # The committed tokenizer is what the committed inputs train (compared by content, so a
    # `tokenizers` upgrade that only changes the JSON layout does not fail this).
    fresh, committed = json.loads(first), json.loads((MODEL_DIR / "tokenizer.json").read_bytes())
    for key in ("model", "added_tokens", "normalizer", "pre_tokenizer", "decoder"):
        assert fresh[key] == committed[key], key
