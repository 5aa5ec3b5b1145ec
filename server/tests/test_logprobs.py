"""``engine/logprobs.py``: a batch step's logprobs rendered together are what each row
rendered alone gives (same top tokens, same order, same values), with one evaluation."""

from __future__ import annotations

import math
from pathlib import Path

import mlx.core as mx
from mlx_lm.tokenizer_utils import load

from mlxcel.engine.logprobs import LogprobRenderer

MODEL = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny"


def test_a_batch_renders_each_row_as_alone() -> None:
    renderer = LogprobRenderer(load(MODEL))
    mx.random.seed(3)
    rows = [mx.log(mx.softmax(mx.random.normal((2048,)))) for _ in range(5)]
    # A filtered row: -inf outside its two best tokens (post-sampling probabilities).
    best = mx.argsort(rows[4])[-2:]
    kept = (mx.arange(2048)[:, None] == best[None, :]).any(axis=1)
    rows[4] = mx.where(kept, rows[4], -mx.inf)
    tokens = [7, 1, 2047, 0, int(best[0].item())]
    top_ns = [5, 0, 3, 5, 4]
    together = renderer.render_batch(rows, tokens, top_ns)
    alone = [renderer.render(row, token, n) for row, token, n in zip(rows, tokens, top_ns,
                                                                      strict=True)]
    assert together == alone
    assert [len(t.top) for t in together] == top_ns
    assert [t.token_id for t in together] == tokens
    assert together[0].logprob == rows[0][7].item()
    assert [t.logprob for t in together[4].top][2:] == [-9999.0, -9999.0]
    assert all(not math.isnan(t.logprob) for r in together for t in r.top)
    assert renderer.render_batch([], [], []) == []
