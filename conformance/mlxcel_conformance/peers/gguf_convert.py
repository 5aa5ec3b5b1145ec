"""Convert a Qwen3 mlx-lm fixture directory to a GGUF file llama-server can load.

llama.cpp's own ``convert_hf_to_gguf.py`` needs torch and transformers and refuses BPE
tokenizers it does not know (it hashes their output), so the fixture is written with the
``gguf`` package directly (numpy only, ``pip install gguf``). What llama.cpp expects, as
verified against llama-server (llama.cpp's loader, src/llama-model-loader.cpp and
src/llama-vocab.cpp in https://github.com/ggml-org/llama.cpp):

- architecture ``qwen3``; tensor names from ``gguf.get_tensor_name_map(MODEL_ARCH.QWEN3, n)``;
  F32 weights; Qwen's q/k projections need no rotary permutation (Llama's would);
  ``q_norm``/``k_norm`` included; no ``output.weight`` when the embeddings are tied (the loader
  falls back to ``token_embd``); the rope dimension count is ``head_dim``;
- tokenizer model ``gpt2`` (byte-level BPE) with merges from ``tokenizer.json``, added tokens
  marked CONTROL, ``add_bos_token`` false, the chat template copied verbatim; the pre-tokenizer
  name is the llama.cpp one whose regex equals the fixture's (``qwen2`` for Qwen's split regex,
  ``gpt-2`` for a plain ByteLevel pre-tokenizer).

    python -m mlxcel_conformance.peers.gguf_convert fixtures/models/qwen3-tiny /tmp/qwen3-tiny.gguf
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

# Qwen2/Qwen3's split regex as written in their tokenizer.json; llama.cpp knows it as "qwen2".
QWEN2_SPLIT_REGEX = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


class ConversionError(Exception):
    """The model directory is not something this converter can write as GGUF."""


def pre_tokenizer_name(tokenizer: dict[str, Any]) -> str:
    """The llama.cpp pre-tokenizer whose regex matches ``tokenizer.json``'s pre-tokenizer."""
    pre = tokenizer.get("pre_tokenizer") or {}
    parts = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    for part in parts:
        regex = part.get("pattern", {}).get("Regex")
        if part.get("type") == "Split" and regex == QWEN2_SPLIT_REGEX:
            return "qwen2"
    if any(p.get("type") == "ByteLevel" and p.get("use_regex", True) for p in parts):
        return "gpt-2"
    raise ConversionError(f"no llama.cpp pre-tokenizer known for {json.dumps(pre)[:200]}")


def vocabulary(tokenizer: dict[str, Any], size: int) -> tuple[list[str], list[int], list[str]]:
    """Token strings, gguf token types and merges, indexed by id up to the model's vocab size."""
    import gguf

    model = tokenizer["model"]
    if model.get("type") != "BPE":
        raise ConversionError(f"tokenizer model {model.get('type')!r} is not byte-level BPE")
    tokens = [f"[PAD{i}]" for i in range(size)]
    types = [int(gguf.TokenType.UNUSED)] * size
    for text, index in model["vocab"].items():
        tokens[index], types[index] = text, int(gguf.TokenType.NORMAL)
    for added in tokenizer.get("added_tokens", []):
        # Every added token is matched whole by llama.cpp only when it is CONTROL (or
        # USER_DEFINED); CONTROL also keeps the chat markers out of detokenized text.
        tokens[added["id"]], types[added["id"]] = added["content"], int(gguf.TokenType.CONTROL)
    merges = [m if isinstance(m, str) else " ".join(m) for m in model.get("merges", [])]
    return tokens, types, merges


def _hparams(writer: Any, config: dict[str, Any]) -> None:
    head_dim = int(config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"])
    writer.add_block_count(int(config["num_hidden_layers"]))
    writer.add_context_length(int(config.get("max_position_embeddings", 4096)))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_head_count(int(config["num_attention_heads"]))
    writer.add_head_count_kv(int(config.get("num_key_value_heads", config["num_attention_heads"])))
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(float(config.get("rope_theta", 10000.0)))
    writer.add_layer_norm_rms_eps(float(config.get("rms_norm_eps", 1e-6)))


def _tokenizer(writer: Any, directory: Path, config: dict[str, Any]) -> None:
    tokenizer = json.loads((directory / "tokenizer.json").read_text(encoding="utf-8"))
    tok_config = json.loads((directory / "tokenizer_config.json").read_text(encoding="utf-8"))
    tokens, types, merges = vocabulary(tokenizer, int(config["vocab_size"]))
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre_tokenizer_name(tokenizer))
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    ids = {text: index for index, text in enumerate(tokens)}
    eos = config.get("eos_token_id")
    eos = eos[0] if isinstance(eos, list) else eos
    if isinstance(tok_config.get("eos_token"), str):
        eos = ids.get(tok_config["eos_token"], eos)
    if eos is not None:
        writer.add_eos_token_id(int(eos))
    if config.get("bos_token_id") is not None:
        writer.add_bos_token_id(int(config["bos_token_id"]))
    if isinstance(tok_config.get("pad_token"), str) and tok_config["pad_token"] in ids:
        writer.add_pad_token_id(ids[tok_config["pad_token"]])
    writer.add_add_bos_token(bool(tok_config.get("add_bos_token", False)))
    if tok_config.get("chat_template"):
        writer.add_chat_template(tok_config["chat_template"])


def _tensors(writer: Any, directory: Path, config: dict[str, Any]) -> int:
    import gguf
    import mlx.core as mx

    n_layer = int(config["num_hidden_layers"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.QWEN3, n_layer)
    count = 0
    for path in sorted(directory.glob("*.safetensors")):
        for hf_name, array in sorted(mx.load(str(path)).items()):  # type: ignore[union-attr]
            if hf_name == "lm_head.weight" and config.get("tie_word_embeddings"):
                continue
            name = names.get_name(hf_name, try_suffixes=(".weight", ".bias"))
            if name is None:
                raise ConversionError(f"no GGUF name for tensor {hf_name}")
            writer.add_tensor(name, np.asarray(array.astype(mx.float32)))
            count += 1
    if not count:
        raise ConversionError(f"no *.safetensors weights in {directory}")
    return count


def convert(directory: str | Path, out: str | Path) -> Path:
    """Write ``directory`` (an mlx-lm qwen3 model) to the GGUF file ``out``; return its path."""
    import gguf

    source, target = Path(directory), Path(out)
    config = json.loads((source / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "qwen3":
        raise ConversionError(f"only qwen3 fixtures are supported, not {config.get('model_type')}")
    if config.get("quantization"):
        raise ConversionError("quantized weights are not supported")
    target.parent.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(target), "qwen3")
    writer.add_name(source.name)
    writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
    _hparams(writer, config)
    _tokenizer(writer, source, config)
    _tensors(writer, source, config)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("model_dir")
    parser.add_argument("out")
    args = parser.parse_args(argv)
    print(convert(args.model_dir, args.out))


if __name__ == "__main__":
    main()
