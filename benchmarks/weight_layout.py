"""The NumPy path's step with its large weights held as ``products.arrange`` holds them (row-major
``(out, in)``, multiplied from the left) against the same weights held row-major ``(in, out)``,
both in one process, rounds interleaved (order reversed every other round): on a shared host,
separate processes run one after the other differ by more than the layouts do.

    python -m benchmarks.weight_layout --fixture bench --batch 1,8,32 --rounds 8
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from typing import Any

import numpy as np

from .fixture import fixture_path
from .numpy_step import step_times


def rows_major(weights: Any) -> Any:
    """``weights`` with every product's weight (and the head) a row-major ``(in, out)`` copy."""

    def copy(linear: Any) -> Any:
        return dataclasses.replace(linear, weight_t=np.array(linear.weight_t, order="C"))

    layers = [dataclasses.replace(layer, qkv=copy(layer.qkv), o=copy(layer.o),
                                  gate_up=copy(layer.gate_up), down=copy(layer.down))
              for layer in weights.layers]
    return dataclasses.replace(weights, layers=layers,
                               lm_head_t=np.array(weights.lm_head_t, order="C"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", default="bench", help="tiny or bench")
    parser.add_argument("--batch", default="1,8,32")
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()

    from mlxcel.engine.model import load_model
    from mlxcel.engine.numpy_decode import numpy_weights

    model = load_model(fixture_path(args.fixture), ctx_size=4096)
    arranged = numpy_weights(model.model, True)
    if arranged is None:
        raise SystemExit("the NumPy path does not take this model")
    layouts = {"arranged": arranged, "in_out": rows_major(arranged)}
    batches = [int(b) for b in args.batch.split(",")]
    wall: dict[str, dict[int, list[float]]] = {name: {b: [] for b in batches} for name in layouts}
    for round_ in range(args.rounds):
        order = list(layouts) if round_ % 2 == 0 else list(layouts)[::-1]
        for name in order:
            for batch in batches:
                wall[name][batch].append(step_times(layouts[name], batch, args.steps)[1])
    results = {}
    for batch in batches:
        ratios = [a / b for a, b in zip(wall["arranged"][batch], wall["in_out"][batch],
                                        strict=True)]
        results[str(batch)] = {
            "arranged_ms": round(statistics.median(wall["arranged"][batch]), 3),
            "in_out_ms": round(statistics.median(wall["in_out"][batch]), 3),
            "ratio_median": round(statistics.median(ratios), 3),
            "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)]}
    print(json.dumps({"fixture": args.fixture, "steps": args.steps, "rounds": args.rounds,
                      "wall_per_step": results}, indent=2))


if __name__ == "__main__":
    main()
