"""The CPU decode kernels (engine/cpu_kernels.py) against MLX's own functions and numpy."""

from __future__ import annotations

import os
import subprocess
import sys

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx_lm.models import activations, base

from mlxcel.engine import cpu_kernels


def test_exp_is_as_accurate_as_mx_exp() -> None:
    x = mx.concatenate([mx.linspace(-87.0, 88.0, 20001), mx.random.normal((20000,)) * 4])
    reference = np.exp(np.array(x, dtype=np.float64))
    ours = np.array(cpu_kernels.exp(x), dtype=np.float64)
    theirs = np.array(mx.exp(x), dtype=np.float64)
    error = np.max(np.abs(ours - reference) / reference)
    assert error <= 1.5 * np.max(np.abs(theirs - reference) / reference) + 1e-9
    # float32 rounds x * log2(e) to within |x| ulps, so the error grows towards the range's
    # ends; where activations and softmax live it is about 7 ulps, as mx.exp
    assert error < 5e-6
    near = np.abs(np.array(x)) <= 20
    assert np.max(np.abs(ours - reference)[near] / reference[near]) < 1.5e-6


def test_swiglu_matches_mlx_lm() -> None:
    gate, x = mx.random.normal((3, 5, 512)) * 6, mx.random.normal((3, 5, 512))
    ours, theirs = np.array(cpu_kernels.swiglu(gate, x)), np.array(activations.swiglu(gate, x))
    np.testing.assert_allclose(ours, theirs, rtol=2e-6, atol=1e-7)
    extreme = mx.array([-200.0, -90.0, 0.0, 90.0, 200.0] * 1000)
    np.testing.assert_allclose(np.array(cpu_kernels.swiglu(extreme, mx.ones((5000,))))[:5],
                               [0.0, 0.0, 0.0, 90.0, 200.0], atol=1e-6)
    small = mx.random.normal((1, 1, 64))
    assert mx.array_equal(cpu_kernels.swiglu(small, small), activations.swiglu(small, small))


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_half_precision_models_keep_their_dtype(dtype: mx.Dtype) -> None:
    gate = (mx.random.normal((4, 2048)) * 4).astype(dtype)
    x = mx.random.normal((4, 2048)).astype(dtype)
    ours, theirs = cpu_kernels.swiglu(gate, x), activations.swiglu(gate, x)
    assert ours.dtype == dtype
    np.testing.assert_allclose(np.array(ours.astype(mx.float32)),
                               np.array(theirs.astype(mx.float32)), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("masked", [False, True])
def test_decode_attention_matches_fast_sdpa(masked: bool) -> None:
    batch, q_heads, kv_heads, length, dim = 4, 8, 2, 1037, 16  # past MIN_SCORES
    q = mx.random.normal((batch, q_heads, 1, dim))
    k = mx.random.normal((batch, kv_heads, length, dim))
    v = mx.random.normal((batch, kv_heads, length, dim))
    mask = None
    if masked:  # left padding, as BatchKVCache masks it: row i ignores its first i positions
        mask = (mx.arange(length)[None, :] >= mx.arange(batch)[:, None]).reshape(
            batch, 1, 1, length)
    ours = cpu_kernels.decode_attention(q, k, v, None, 0.25, mask)
    theirs = mx.fast.scaled_dot_product_attention(q, k, v, scale=0.25, mask=mask)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("queries, length", [(3, 4096), (1, 16)], ids=["prompt", "small"])
def test_prompts_and_small_batches_fall_back_to_mlx_lm(queries: int, length: int) -> None:
    q, k = mx.random.normal((1, 8, queries, 8)), mx.random.normal((1, 8, length, 8))
    mask = "causal" if queries > 1 else None
    ours = cpu_kernels.decode_attention(q, k, k, None, 0.5, mask)
    theirs = base.scaled_dot_product_attention(q, k, k, None, 0.5, mask)
    assert mx.array_equal(ours, theirs)


def test_context_and_prompt_lengths_do_not_compile_a_graph_each(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # MLX keeps every shape a compiled function was traced for and searches them one by one:
    # a softmax traced per context length would pile up a graph per step of every generation.
    traced: list[tuple[int, ...]] = []
    exp_parts = cpu_kernels._exp_parts

    def counting(x: mx.array) -> tuple[mx.array, mx.array]:
        traced.append(tuple(x.shape))
        return exp_parts(x)

    monkeypatch.setattr(cpu_kernels, "_exp_parts", counting)
    q = mx.random.normal((4, 8, 1, 16))
    k, v = mx.random.normal((4, 2, 700, 16)), mx.random.normal((4, 2, 700, 16))
    gate, x = mx.random.normal((1, 64, 512)), mx.random.normal((1, 64, 512))
    for step in range(6):
        length = 600 + step  # past MIN_SCORES: the decode attention's own softmax
        ours = cpu_kernels.decode_attention(q, k[:, :, :length], v[:, :, :length], None, 0.25,
                                            None)
        theirs = mx.fast.scaled_dot_product_attention(q, k[:, :, :length], v[:, :, :length],
                                                      scale=0.25)
        np.testing.assert_allclose(np.array(ours), np.array(theirs), rtol=1e-5, atol=1e-6)
        prompt = 40 + step  # a prompt chunk's SwiGLU
        np.testing.assert_allclose(
            np.array(cpu_kernels.swiglu(gate[:, :prompt], x[:, :prompt])),
            np.array(activations.swiglu(gate[:, :prompt], x[:, :prompt])), rtol=2e-6, atol=1e-7)
    assert len(traced) <= 2, traced  # at most one trace each, whatever the lengths


def _norm(dims: int, eps: float) -> nn.RMSNorm:
    norm = nn.RMSNorm(dims, eps=eps)
    norm.weight = mx.random.normal((dims,))
    return norm


@pytest.mark.parametrize("shape", [(1, 1, 512), (8, 1, 512), (8, 1, 4, 64)])
def test_decode_rms_norm_matches_fast_rms_norm(shape: tuple[int, ...]) -> None:
    norm = _norm(shape[-1], 1e-6)
    x = mx.random.normal(shape) * 3
    theirs = norm(x)
    norm.__class__ = cpu_kernels.DecodeRMSNorm
    np.testing.assert_allclose(np.array(norm(x)), np.array(theirs), rtol=1e-6, atol=1e-6)
    assert list(norm.parameters()) == ["weight"]


@pytest.mark.parametrize("dtype", [mx.float16, mx.bfloat16])
def test_decode_rms_norm_keeps_half_precision(dtype: mx.Dtype) -> None:
    norm = _norm(256, 1e-5)
    norm.update({"weight": norm.weight.astype(dtype)})
    x = (mx.random.normal((4, 1, 256)) * 100).astype(dtype)  # squares overflow float16
    theirs = norm(x)
    norm.__class__ = cpu_kernels.DecodeRMSNorm
    ours = norm(x)
    assert ours.dtype == dtype
    np.testing.assert_allclose(np.array(ours.astype(mx.float32)),
                               np.array(theirs.astype(mx.float32)), rtol=2e-2, atol=2e-2)


def test_decode_rms_norm_leaves_prompts_to_fast_rms_norm() -> None:
    norm = _norm(64, 1e-6)
    x = mx.random.normal((1, 7, 64))
    theirs = norm(x)
    norm.__class__ = cpu_kernels.DecodeRMSNorm
    assert mx.array_equal(norm(x), theirs)


def _rope_truth(x: np.ndarray, positions: np.ndarray, base: float, traditional: bool,
                scale: float) -> np.ndarray:
    """Rotary embedding in float64; ``positions`` per sequence (the first axis)."""
    dims = x.shape[-1]
    inv = base ** (-np.arange(dims // 2) * 2.0 / dims)
    angles = (positions * scale)[:, None, None, None] * inv  # (batch, 1, 1, half)
    cos, sin = np.cos(angles), np.sin(angles)
    if traditional:
        a, b = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2], out[..., 1::2] = a * cos - b * sin, a * sin + b * cos
        return out
    a, b = x[..., : dims // 2], x[..., dims // 2:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], axis=-1)


@pytest.mark.parametrize("traditional", [False, True], ids=["halves", "traditional"])
@pytest.mark.parametrize("offset", [0, 37, 30000, "array"])
def test_decode_rope_matches_fast_rope(traditional: bool, offset: object) -> None:
    rope = nn.RoPE(64, traditional=traditional, base=1e6, scale=0.5)
    x = mx.random.normal((4, 8, 1, 64))
    positions = mx.array([3, 90, 1000, 4000]) if offset == "array" else offset
    theirs = rope(x, offset=positions)
    rope.__class__ = cpu_kernels.DecodeRoPE
    ours = rope(x, offset=positions)
    assert ours.shape == x.shape and ours.dtype == x.dtype
    where = np.array(positions) if offset == "array" else np.full(4, float(offset))  # type: ignore[arg-type]
    truth = _rope_truth(np.array(x, dtype=np.float64), where, 1e6, traditional, 0.5)
    # float32 angles drift with the position: never further from the truth than fast.rope
    error_fast = np.max(np.abs(np.array(theirs) - truth))
    assert np.max(np.abs(np.array(ours) - truth)) <= max(error_fast, 2e-6)
    np.testing.assert_allclose(np.array(ours), np.array(theirs), atol=3e-6 + error_fast)
    assert rope.parameters() == {}
    # the keys' call with the same offset object reuses the tables and gives the same result
    assert mx.array_equal(rope(x, offset=positions), ours)


def test_decode_rope_follows_offsets_that_change_in_place() -> None:
    """A batch's offsets can be one array object whose values move (``offset += 1``): every
    call must rotate by the values it is given, never by tables kept from an earlier call."""
    rope, reference = nn.RoPE(64, base=1e4), nn.RoPE(64, base=1e4)
    rope.__class__ = cpu_kernels.DecodeRoPE
    x = mx.random.normal((3, 4, 1, 64))
    offsets = mx.array([5, 6, 7])
    for _ in range(3):
        ours = rope(x, offset=offsets)
        np.testing.assert_allclose(np.array(ours), np.array(reference(x, offset=offsets)),
                                   atol=1e-5)
        offsets += 1
    position = 5
    for _ in range(3):  # one sequence: whole-number offsets, the same tables per position
        np.testing.assert_allclose(np.array(rope(x, offset=position)),
                                   np.array(reference(x, offset=position)), atol=1e-5)
        position += 1


def test_decode_rope_leaves_prompts_and_partial_rotations_to_fast_rope() -> None:
    prompt = mx.random.normal((1, 8, 5, 64))
    rope = nn.RoPE(64)
    theirs = rope(prompt, offset=3)
    rope.__class__ = cpu_kernels.DecodeRoPE
    assert mx.array_equal(rope(prompt, offset=3), theirs)
    partial = nn.RoPE(32)
    step = mx.random.normal((2, 8, 1, 64))
    theirs = partial(step, offset=9)
    partial.__class__ = cpu_kernels.DecodeRoPE
    assert mx.array_equal(partial(step, offset=9), theirs)


INSTALLED = """
import mlx_lm, sys
from mlx_lm.models import qwen3
from mlxcel.engine import cpu_kernels
model = mlx_lm.load(sys.argv[1])[0]
print(sorted(cpu_kernels.install(model)), qwen3.swiglu is cpu_kernels.swiglu,
      type(model.layers[0].self_attn.rope).__name__)
"""


@pytest.mark.parametrize("env, expected", [
    ("1", "['DecodeRMSNorm x9', 'DecodeRoPE x2', "
          "'mlx_lm.models.qwen3.scaled_dot_product_attention', 'mlx_lm.models.qwen3.swiglu'] "
          "True DecodeRoPE"),
    ("0", "[] False RoPE"),
])
def test_install_swaps_the_model_modules_functions(fixture_model: str, env: str,
                                                   expected: str) -> None:
    result = subprocess.run([sys.executable, "-c", INSTALLED, fixture_model], text=True,
                            capture_output=True, env={**os.environ, cpu_kernels.ENV: env},
                            check=True, timeout=120)
    assert result.stdout.strip() == expected


@pytest.mark.parametrize("argv, env, expected", [
    ([], None, True), (["--no-cpu-kernels"], None, False), ([], "0", False), ([], "1", True),
])
def test_the_flag_and_its_variable_reach_the_engine(argv: list[str], env: str | None,
                                                    expected: bool,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from mlxcel.cli import build_parser, config_from_args, engine_config

    if env is not None:
        monkeypatch.setenv(cpu_kernels.ENV, env)
    else:
        monkeypatch.delenv(cpu_kernels.ENV, raising=False)
    args = build_parser().parse_args(["--model", "/m/x", *argv])
    assert engine_config(args, config_from_args(args)).cpu_kernels is expected
