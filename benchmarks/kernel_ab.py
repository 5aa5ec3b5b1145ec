"""The CPU kernels (``engine/cpu_kernels.py``) against MLX's and mlx-lm's own functions, one
decode step each, paired: the same model and cache, every replacement switched on and off
between consecutive steps, and the median of the per-pair ratios reported. On a shared machine
whose speed drifts by ±15% within a minute, separate runs (or even separate blocks of steps in
one process) cannot resolve a 5% change; neighbouring steps see the same machine.

    python -m benchmarks.kernel_ab --fixture bench --batch 1,8,32 --pairs 80
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from .fixture import fixture_path


def switches(model: Any) -> list[tuple[Any, str, Any, Any]]:
    """(object, attribute, MLX's value, ours) for every replacement ``install`` made."""
    from mlxcel.engine import cpu_kernels

    out: list[tuple[Any, str, Any, Any]] = []
    for name in {type(m).__module__ for _, m in model.named_modules()}:
        module = sys.modules.get(name)
        for attr, (original, replacement) in cpu_kernels.REPLACEMENTS.items():
            if module is not None and getattr(module, attr, None) is replacement:
                out.append((module, attr, original, replacement))
    originals = {kind: base for base, kind in cpu_kernels.MODULES.items()}
    for _, layer in model.named_modules():
        if type(layer) in originals:
            out.append((layer, "__class__", originals[type(layer)], type(layer)))
    return out


def paired(model_path: str, batch: int, pairs: int, prompt_len: int) -> dict[str, float]:
    import mlx.core as mx
    from mlx_lm import load
    from mlx_lm.models.cache import BatchKVCache, make_prompt_cache

    from mlxcel.engine import cpu_kernels

    model = load(model_path)[0]
    cpu_kernels.install(model)
    swaps = switches(model)

    def use(ours: bool) -> None:
        for target, attr, theirs, mine in swaps:
            setattr(target, attr, mine if ours else theirs)

    cache = ([BatchKVCache([0] * batch) for _ in model.layers] if batch > 1
             else make_prompt_cache(model))
    mx.eval(model(mx.array([[5] * prompt_len] * batch), cache=cache))
    tokens = mx.array([[7]] * batch)

    def step() -> float:
        started = time.perf_counter()
        mx.eval(mx.argmax(model(tokens, cache=cache)[:, -1, :], axis=-1))
        return time.perf_counter() - started

    for ours in (False, True, False, True):  # compile traces, warm caches
        use(ours)
        for _ in range(3):
            step()
    theirs_ms, ours_ms = [], []
    for _ in range(pairs):
        use(False)
        theirs_ms.append(step() * 1e3)
        use(True)
        ours_ms.append(step() * 1e3)
    use(True)
    return {
        "batch": batch,
        "mlx_step_ms": round(statistics.median(theirs_ms), 2),
        "kernels_step_ms": round(statistics.median(ours_ms), 2),
        "kernels_over_mlx": round(statistics.median(
            o / t for o, t in zip(ours_ms, theirs_ms, strict=True)), 3),
        "replacements": len(swaps),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", default="bench", help="tiny or bench")
    parser.add_argument("--batch", default="1,8,32")
    parser.add_argument("--pairs", type=int, default=80)
    parser.add_argument("--prompt-len", type=int, default=64)
    args = parser.parse_args()
    model = fixture_path(args.fixture)
    rows = [paired(model, int(b), args.pairs, args.prompt_len) for b in args.batch.split(",")]
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
