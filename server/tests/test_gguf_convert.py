"""``mlxcel-convert``: the mlx-lm directory it writes loads with ``mlx_lm.load`` into the model
``--model FILE.gguf`` serves: the same greedy tokens, the same tokenizer and template."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import mlx.core as mx
import pytest
from mlx_lm import load
from mlx_lm.generate import generate_step

from mlxcel.convert_gguf import main
from mlxcel.engine.gguf import UnsupportedGGUF, load_gguf
from mlxcel.engine.gguf.export import export_mlx_lm

from .synthetic_gguf import LLAMA, QWEN3, write_fixture_gguf


def _greedy(model: object, prompt: list[int], n: int = 16) -> list[int]:
    return [int(token) for token, _ in generate_step(
        mx.array(prompt), model, max_tokens=n, sampler=lambda x: mx.argmax(x, axis=-1))]


@pytest.mark.parametrize(("model_dir", "arch", "qtype"),
                         [(LLAMA, "llama", gguf.GGMLQuantizationType.Q4_0),
                          (QWEN3, "qwen3", gguf.GGMLQuantizationType.Q5_1)])
def test_converted_directory_decodes_like_the_gguf(tmp_path: Path, model_dir: Path, arch: str,
                                                   qtype: gguf.GGMLQuantizationType) -> None:
    source = tmp_path / "m.gguf"
    write_fixture_gguf(model_dir, source, arch=arch, matrix_type=qtype)
    main([str(source), str(tmp_path / "out")])
    out = tmp_path / "out"
    assert {"config.json", "model.safetensors", "tokenizer.json",
            "tokenizer_config.json"} <= {p.name for p in out.iterdir()}
    config = json.loads((out / "config.json").read_text())
    assert config["model_type"] == arch and config["quantization"]["group_size"] == 32
    assert "chat_template" in json.loads((out / "tokenizer_config.json").read_text())

    gguf_model, gguf_tokenizer, _ = load_gguf(str(source))
    dir_model, dir_tokenizer = load(str(out))  # type: ignore[misc]
    messages = [{"role": "user", "content": "Tell me about 2 cats."}]
    prompt = gguf_tokenizer.apply_chat_template(messages, add_generation_prompt=True)
    assert dir_tokenizer.apply_chat_template(messages, add_generation_prompt=True) == prompt
    assert _greedy(dir_model, prompt) == _greedy(gguf_model, prompt)


def test_refuses_a_directory_that_holds_files(tmp_path: Path) -> None:
    write_fixture_gguf(LLAMA, tmp_path / "m.gguf")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(UnsupportedGGUF, match="is not an empty directory"):
        export_mlx_lm(str(tmp_path / "m.gguf"), tmp_path / "out")
