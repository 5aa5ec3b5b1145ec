"""The larger benchmark fixture: a qwen3 model with ~28M random parameters and the committed
tiny fixture's tokenizer, generated deterministically into a cache directory (too big to commit).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "fixtures" / "models" / "qwen3-tiny"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "generation_config.json")
CONFIG = {
    "hidden_size": 512, "intermediate_size": 1536, "num_hidden_layers": 8,
    "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 64,
}


def cache_dir() -> Path:
    base = os.environ.get("MLXCEL_BENCH_CACHE") or Path.home() / ".cache" / "mlxcel"
    return Path(base) / "bench-models"


def fixture_path(name: str) -> str:
    """The model for a ``--fixture`` name: ``tiny`` (committed), ``bench`` (built) or ``real``
    (SmolLM2-135M-Instruct's Q4_1 GGUF file, fetched by ``fixtures/real_model.py``)."""
    if name == "real":
        return str(real_gguf())
    if name not in ("tiny", "bench"):
        raise ValueError(f"unknown fixture {name!r}: tiny, bench or real")
    return str(TINY) if name == "tiny" else str(build_bench_model())


def real_gguf() -> Path:
    sys.path.insert(0, str(ROOT / "fixtures"))
    try:
        from real_model import real_model_path
    finally:
        sys.path.pop(0)
    path: Path = real_model_path()
    return path


def mlx_lm_dir(model: Path) -> Path:
    """An mlx-lm directory of ``model``: the model itself, or a GGUF file written once by
    ``mlxcel-convert`` into the cache (the same quantized weights, for mlx_lm.server, vllm-mlx
    and the in-process limit)."""
    if model.suffix != ".gguf":
        return model
    out = cache_dir() / f"{model.stem}-mlx"
    if not (out / "model.safetensors").exists():
        from mlxcel.engine.gguf.export import export_mlx_lm

        tmp = out.with_suffix(".tmp")
        if tmp.exists():
            shutil.rmtree(tmp)
        export_mlx_lm(str(model), str(tmp))
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    return out


def build_bench_model(seed: int = 0) -> Path:
    """Create (once) and return the directory of the ~28M-parameter bench model."""
    import mlx.core as mx
    from mlx.utils import tree_flatten
    from mlx_lm.models import qwen3

    out = cache_dir() / "qwen3-28m-f32"
    if (out / "model.safetensors").exists():
        return out
    # float32: MLX's CPU backend has no fast half-precision matmul.
    config = {**json.loads((TINY / "config.json").read_text()), **CONFIG,
              "torch_dtype": "float32"}
    mx.random.seed(seed)
    model = qwen3.Model(qwen3.ModelArgs.from_dict(config))
    weights = dict(tree_flatten(model.parameters()))
    mx.eval(weights)
    tmp = out.with_suffix(".tmp")
    tmp.mkdir(parents=True, exist_ok=True)
    mx.save_safetensors(str(tmp / "model.safetensors"), weights)
    (tmp / "config.json").write_text(json.dumps(config, indent=2))
    for name in TOKENIZER_FILES:
        if (TINY / name).exists():
            shutil.copy(TINY / name, tmp / name)
    if out.exists():
        shutil.rmtree(out)
    tmp.rename(out)
    return out


def parameter_count(path: Path) -> int:
    import mlx.core as mx

    if path.suffix == ".gguf":
        from gguf import GGUFReader

        return sum(int(t.n_elements) for t in GGUFReader(str(path)).tensors)

    weights = mx.load(str(path / "model.safetensors"))
    assert isinstance(weights, dict)
    return sum(int(v.size) for v in weights.values())


if __name__ == "__main__":
    built = build_bench_model()
    print(built, parameter_count(built))
