"""Where one batched decode step goes: the whole step (mlx-lm's ``BatchGenerator``, and the bare
forward pass over a ``BatchKVCache``), the model's matrix products alone, the attention over the
cache alone, and the machine's memory bandwidth, which bounds the products (every step reads
every weight once).

    python -m benchmarks.step_profile --fixture bench --batch 1,8,32

The point is the split, not the totals: when the products alone take most of a step and run at
the memory bandwidth, no scheduling or Python-side change makes the step much faster; only
reading fewer bytes (a smaller dtype, quantized weights) would, and that is another model.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from typing import Any

from .fixture import fixture_path


def timed(fn: Callable[[], Any], repeat: int, warmup: int = 5) -> float:
    """Median-free mean milliseconds per call after ``warmup`` calls (the calls sync)."""
    for _ in range(warmup):
        fn()
    started = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - started) / repeat * 1e3


def profile(model_path: str, batch: int, prompt_len: int, repeat: int) -> dict[str, float]:
    import mlx.core as mx
    import mlx.nn as nn
    import numpy as np
    from mlx_lm import load
    from mlx_lm.generate import BatchGenerator
    from mlx_lm.models.base import create_attention_mask, scaled_dot_product_attention
    from mlx_lm.models.cache import BatchKVCache

    model = load(model_path)[0]
    prompt = [5] * prompt_len

    def greedy(logprobs: mx.array) -> mx.array:
        return mx.argmax(logprobs, axis=-1)

    generator = BatchGenerator(model, completion_batch_size=batch, prefill_batch_size=batch)
    generator.insert([prompt] * batch, max_tokens=[10_000] * batch, samplers=[greedy] * batch)
    batch_step = timed(generator.next, repeat, warmup=10)

    cache = [BatchKVCache([0] * batch) for _ in model.layers]
    mx.eval(model(mx.array([prompt] * batch), cache=cache))
    tokens = mx.array([[7]] * batch)

    def forward() -> None:
        mx.eval(mx.argmax(model(tokens, cache=cache)[:, -1, :], axis=-1))

    forward_step = timed(forward, repeat)

    linears = [m for _, m in model.named_modules() if isinstance(m, nn.Linear)]
    embed = getattr(getattr(model, "model", model), "embed_tokens", None)
    heads = [embed.weight] if embed is not None and not hasattr(model, "lm_head") else []
    weights = [m.weight for m in linears] + heads
    inputs = {w.shape[1]: mx.random.normal((batch, 1, w.shape[1])) for w in weights}
    mx.eval(list(inputs.values()))

    def products() -> None:
        mx.eval([inputs[w.shape[1]] @ w.T for w in weights])

    products_ms = timed(products, repeat)
    weight_bytes = sum(w.nbytes for w in weights)

    attn = model.layers[0].self_attn
    heads_q, heads_kv = attn.n_heads, attn.n_kv_heads
    head_dim = attn.q_proj.weight.shape[0] // heads_q
    kv = [BatchKVCache([0] * batch) for _ in model.layers]
    past = mx.random.normal((batch, heads_kv, prompt_len + repeat // 2, head_dim))
    for c in kv:
        c.update_and_fetch(past, past)
    q = mx.random.normal((batch, heads_q, 1, head_dim))
    k1 = mx.random.normal((batch, heads_kv, 1, head_dim))
    hidden = mx.zeros((batch, 1, 8))
    mx.eval(q, k1, [c.state for c in kv])

    def attention() -> None:
        mask = create_attention_mask(hidden, kv[0])
        outs = []
        for c in kv:
            keys, values = c.update_and_fetch(k1, k1)
            outs.append(scaled_dot_product_attention(q, keys, values, cache=c,
                                                     scale=head_dim**-0.5, mask=mask))
            c.offset -= 1  # keep the length fixed between calls
            c._idx -= 1
        mx.eval(outs)

    attention_ms = timed(attention, repeat)

    # numpy's sum streams memory at close to the machine's bandwidth; MLX's CPU reduction is
    # slower than the memory, so it would understate it
    block = np.ones(weight_bytes // 4, dtype=np.float32)
    read_ms = timed(block.sum, max(repeat // 4, 3), warmup=2)
    # a matrix product with few rows is bound by reading the weights: the same bytes, once
    bandwidth_gb_s = weight_bytes / (products_ms / 1e3) / 1e9
    return {
        "batch": batch,
        "prompt_len": prompt_len,
        "batch_generator_step_ms": round(batch_step, 2),
        "forward_step_ms": round(forward_step, 2),
        "matrix_products_ms": round(products_ms, 2),
        "attention_over_cache_ms": round(attention_ms, 2),
        "rest_ms": round(forward_step - products_ms - attention_ms, 2),
        "weight_mb": round(weight_bytes / 1e6, 1),
        "products_read_weights_gb_s": round(bandwidth_gb_s, 2),
        "plain_read_gb_s": round(weight_bytes / (read_ms / 1e3) / 1e9, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", default="bench", help="tiny or bench")
    parser.add_argument("--batch", default="1,8,32")
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    model = fixture_path(args.fixture)
    rows = [profile(model, int(b), args.prompt_len, args.repeat) for b in args.batch.split(",")]
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
