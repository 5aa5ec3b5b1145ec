"""The larger benchmark fixture: a qwen3 model with ~28M random parameters and the committed
tiny fixture's tokenizer, generated deterministically into a cache directory (too big to commit).
"""

from __future__ import annotations

import json
import os
import shutil
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
    """The model directory for a ``--fixture`` name: ``tiny`` (committed) or ``bench`` (built)."""
    return str(TINY) if name == "tiny" else str(build_bench_model())


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

    weights = mx.load(str(path / "model.safetensors"))
    assert isinstance(weights, dict)
    return sum(int(v.size) for v in weights.values())


if __name__ == "__main__":
    built = build_bench_model()
    print(built, parameter_count(built))
