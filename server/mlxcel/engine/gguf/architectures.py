"""Which GGUF architectures (``general.architecture``) the server builds, as which mlx-lm model,
and the mlx-lm config made from the file's ``{arch}.*`` hyper-parameters.

Key names: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md ("LLM" standardized keys);
llama.cpp's converter (convert_hf_to_gguf.py, ``LlamaModel.permute``) permutes the rows of
``attn_q``/``attn_k`` for llama-style rope, and not for Qwen's or Gemma's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gguf

from .rope_scaling import ROPE_FREQS, rope_scaling
from .unsupported import UnsupportedGGUF


@dataclass(frozen=True)
class Architecture:
    """A GGUF architecture the server builds: llama.cpp's name table for it, the mlx-lm module
    (``mlx_lm.models.<model_type>``) and whether ``attn_q``/``attn_k`` rows were permuted."""

    gguf_arch: gguf.MODEL_ARCH
    model_type: str
    rope_permuted: bool
    # llama.cpp stores Gemma's RMSNorm weights plus one (conversion/gemma.py, ``modify_tensors``)
    # where mlx-lm's Gemma adds the one itself.
    norms_plus_one: bool = False


# Mistral's GGUFs (7B and its fine-tunes) are written as "llama" and load through that entry.
ARCHITECTURES: dict[str, Architecture] = {
    "llama": Architecture(gguf.MODEL_ARCH.LLAMA, "llama", rope_permuted=True),
    "qwen2": Architecture(gguf.MODEL_ARCH.QWEN2, "qwen2", rope_permuted=False),
    "qwen3": Architecture(gguf.MODEL_ARCH.QWEN3, "qwen3", rope_permuted=False),
    "gemma": Architecture(gguf.MODEL_ARCH.GEMMA, "gemma", rope_permuted=False,
                          norms_plus_one=True),
}


def architecture_of(path: str, metadata: dict[str, Any]) -> tuple[str, Architecture]:
    name = metadata.get("general.architecture")
    if not isinstance(name, str):
        raise UnsupportedGGUF(path, "no general.architecture in the metadata")
    if name not in ARCHITECTURES:
        raise UnsupportedGGUF(path, f"architecture {name!r} is not supported (supported: "
                              f"{', '.join(sorted(ARCHITECTURES))})")
    return name, ARCHITECTURES[name]


def _number(path: str, metadata: dict[str, Any], key: str, default: Any = None) -> Any:
    value = metadata.get(key, default)
    if value is None:
        raise UnsupportedGGUF(path, f"metadata key {key} is missing")
    if isinstance(value, list):  # per-layer values (e.g. head counts) that mlx-lm has no room for
        raise UnsupportedGGUF(path, f"metadata key {key} varies per layer, which is not supported")
    return value


# Tensors the config is read from, not weights of the model.
CONFIG_TENSORS = frozenset({ROPE_FREQS})


def model_config(path: str, metadata: dict[str, Any], tensors: dict[str, Any]) -> dict[str, Any]:
    """The mlx-lm ``config.json`` this file describes (what ``mlx_lm.load`` would return);
    ``tensors`` maps names to arrays (MLX's, or the reader's memory-mapped ones)."""
    arch, spec = architecture_of(path, metadata)

    def key(name: str, default: Any = None) -> Any:
        return _number(path, metadata, f"{arch}.{name}", default)

    heads = int(key("attention.head_count"))
    hidden = int(key("embedding_length"))
    head_dim = int(key("attention.key_length", hidden // heads))
    theta = float(key("rope.freq_base", 10000.0))
    if "token_embd.weight" not in tensors:
        raise UnsupportedGGUF(path, "tensor token_embd.weight is missing")
    eos = [metadata[k] for k in ("tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id")
           if isinstance(metadata.get(k), int)]
    config: dict[str, Any] = {
        "model_type": spec.model_type,
        "hidden_size": hidden,
        "num_hidden_layers": int(key("block_count")),
        "intermediate_size": int(key("feed_forward_length")),
        "num_attention_heads": heads,
        "num_key_value_heads": int(key("attention.head_count_kv", heads)),
        "head_dim": head_dim,
        "rms_norm_eps": float(key("attention.layer_norm_rms_epsilon")),
        "rope_theta": theta,
        "max_position_embeddings": int(key("context_length")),
        "vocab_size": int(tensors["token_embd.weight"].shape[0]),
        "tie_word_embeddings": "output.weight" not in tensors,
        "rope_scaling": rope_scaling(path, metadata, arch, tensors, head_dim, theta),
        "attention_bias": "blk.0.attn_q.bias" in tensors,
        "mlp_bias": "blk.0.ffn_down.bias" in tensors,
    }
    if eos:
        config["eos_token_id"] = sorted(set(eos))
    if isinstance(metadata.get("tokenizer.ggml.bos_token_id"), int):
        config["bos_token_id"] = metadata["tokenizer.ggml.bos_token_id"]
    return config
