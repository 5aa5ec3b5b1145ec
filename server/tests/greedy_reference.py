"""Helpers of the NumPy decode path's tests (test_numpy_decode.py, test_decode_lanes.py): a chat
prompt on a fixture's template, mlx-lm's own greedy tokens for it, and a batch run to the end."""

from __future__ import annotations

from typing import Any

import mlx.core as mx
from mlx_lm.generate import generate_step

from mlxcel.engine.numpy_decode import NumpyBatch


def chat_prompt(tokenizer: Any, text: str) -> list[int]:
    ids: list[int] = tokenizer.apply_chat_template([{"role": "user", "content": text}],
                                                   add_generation_prompt=True)
    return ids


def mlx_greedy(model: Any, prompt: list[int], n: int) -> list[int]:
    """mlx-lm's ``generate_step``'s first ``n`` greedy tokens after ``prompt``."""
    return [int(token) for token, _ in generate_step(
        mx.array(prompt), model, max_tokens=n, sampler=lambda x: mx.argmax(x, axis=-1))]


def drain(batch: NumpyBatch) -> dict[int, list[Any]]:
    """Every response of ``batch`` (a ``LanedBatch`` too) until it holds no sequence, by uid."""
    out: dict[int, list[Any]] = {}
    while len(batch):
        for response in batch.next()[1]:
            out.setdefault(response.uid, []).append(response)
    return out
