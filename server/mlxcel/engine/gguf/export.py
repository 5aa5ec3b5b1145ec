"""A GGUF file written out as an mlx-lm directory (``config.json`` with its ``quantization``,
``model.safetensors``, ``tokenizer.json``, ``tokenizer_config.json`` with the chat template), so
``mlx_lm.server``, vllm-mlx and ``mlxcel-server`` can serve the very weights ``--model FILE.gguf``
serves. The weights are the built model's parameters, written with mlx-lm's own ``save_model`` and
``save_config`` (``mlx_lm/utils.py``)."""

from __future__ import annotations

from pathlib import Path

from mlx_lm.utils import save_config, save_model

from .gguf_tokenizer import save_tokenizer
from .model_builder import load_gguf_model
from .unsupported import UnsupportedGGUF


def export_mlx_lm(path: str, out_dir: str | Path) -> Path:
    """Write ``path`` (a GGUF file) as an mlx-lm model directory ``out_dir``; return it."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UnsupportedGGUF(path, f"{out} exists and is not an empty directory")
    loaded = load_gguf_model(path)
    out.mkdir(parents=True, exist_ok=True)
    save_model(out, loaded.model)
    save_config(dict(loaded.config), config_path=out / "config.json")
    save_tokenizer(path, loaded.metadata, int(loaded.config["max_position_embeddings"]), out)
    return out
