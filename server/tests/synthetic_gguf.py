"""Small GGUF files for the loader's tests, written with ``gguf.GGUFWriter`` from the committed
fixture models (``fixtures/models/llama3-tiny``, ``qwen3-tiny``) the way llama.cpp's converter
(convert_hf_to_gguf.py) writes them: its tensor names, ``attn_q``/``attn_k`` rows permuted for a
llama, the tokenizer as ``tokenizer.ggml.*``, matrices in the tensor type a test asks for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gguf
import mlx.core as mx
import numpy as np

from mlxcel_conformance.peers.gguf_convert import pre_tokenizer_name, vocabulary

ROOT = Path(__file__).resolve().parents[2]
LLAMA = ROOT / "fixtures" / "models" / "llama3-tiny"
QWEN3 = ROOT / "fixtures" / "models" / "qwen3-tiny"
F32 = gguf.GGMLQuantizationType.F32


def llama_cpp_permute(weight: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's converter (``LlamaModel.permute``): HF rows into its rope order."""
    rows = weight.shape[0]
    return (weight.reshape(heads, 2, rows // heads // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def random_fixture(directory: Path, model_type: str) -> Path:
    """An mlx-lm ``model_type`` model (qwen2: attention biases, no q/k norms; gemma: norms that
    add one) with qwen3-tiny's sizes and tokenizer and seeded random weights: the repository
    commits no text fixture of these."""
    import importlib
    import shutil

    from mlx.utils import tree_flatten

    module = importlib.import_module(f"mlx_lm.models.{model_type}")
    config = json.loads((QWEN3 / "config.json").read_text(encoding="utf-8"))
    config.update(model_type=model_type)
    mx.random.seed(20261206)
    model = module.Model(module.ModelArgs.from_dict(config))
    weights = dict(tree_flatten(model.parameters()))
    directory.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(directory / "model.safetensors"), weights)
    (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(QWEN3 / name, directory / name)
    return directory


def fixture_weights(model_dir: Path) -> dict[str, np.ndarray]:
    loaded = mx.load(str(model_dir / "model.safetensors"))
    assert isinstance(loaded, dict)
    return {name: np.asarray(array.astype(mx.float32)) for name, array in loaded.items()}


def stored(array: np.ndarray, qtype: gguf.GGMLQuantizationType) -> np.ndarray:
    """The values a reader gets back from ``array`` written as ``qtype``."""
    if qtype == F32:
        return array
    return gguf.quants.dequantize(gguf.quants.quantize(array, qtype), qtype)


def _hparams(writer: gguf.GGUFWriter, config: dict[str, Any]) -> None:
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_key_length(config["head_dim"])
    writer.add_value_length(config["head_dim"])
    writer.add_rope_freq_base(float(config["rope_theta"]))
    writer.add_layer_norm_rms_eps(float(config["rms_norm_eps"]))


def _tokenizer(writer: gguf.GGUFWriter, model_dir: Path, config: dict[str, Any],
               add_bos: bool) -> None:
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8"))
    tok_config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokens, types, merges = vocabulary(tokenizer, config["vocab_size"])
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre_tokenizer_name(tokenizer))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(config["bos_token_id"])
    writer.add_eos_token_id(tokens.index(tok_config["eos_token"]))
    writer.add_add_bos_token(add_bos)
    writer.add_chat_template(tok_config["chat_template"])


def write_fixture_gguf(model_dir: Path, out: Path, *, arch: str = "llama",
                       matrix_type: gguf.GGMLQuantizationType = F32, add_bos: bool = False,
                       extra: dict[str, np.ndarray] | None = None,
                       drop: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """Write ``model_dir`` to ``out``; return the weights (Hugging Face names, HF row order) as
    the file holds them after quantization, for a reference model. ``extra`` adds tensors
    (GGUF names), ``drop`` leaves fixture tensors out (Hugging Face names)."""
    config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
    layers = config["num_hidden_layers"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH[arch.upper()], layers)
    writer = gguf.GGUFWriter(str(out), arch)
    _hparams(writer, config)
    _tokenizer(writer, model_dir, config, add_bos)
    held: dict[str, np.ndarray] = {}
    for hf_name, array in sorted(fixture_weights(model_dir).items()):
        if hf_name in drop:
            continue
        name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
        assert name is not None, hf_name
        qtype = matrix_type if array.ndim == 2 else F32
        held[hf_name] = stored(array, qtype)
        if arch == "llama" and ".q_proj." in hf_name:
            array = llama_cpp_permute(array, config["num_attention_heads"])
        elif arch == "llama" and ".k_proj." in hf_name:
            array = llama_cpp_permute(array, config["num_key_value_heads"])
        if arch == "gemma" and hf_name.endswith("norm.weight"):
            array = array + 1  # as llama.cpp's Gemma converter stores them
        data = array if qtype == F32 else gguf.quants.quantize(array, qtype)
        writer.add_tensor(name, data, raw_dtype=None if qtype == F32 else qtype)
    for name, array in (extra or {}).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return held
