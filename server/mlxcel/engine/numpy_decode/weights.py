"""The weights of a dense llama-family model (mlx-lm's llama, mistral, qwen2, qwen3) as numpy
arrays, for the NumPy forward pass (``forward.py``), or the reason a model cannot take it.

Float32 weights are shared with MLX, not copied (numpy reads the evaluated MLX arrays through
the buffer protocol; the model keeps them alive). Half-precision weights are converted to
float32 once (numpy has no fast half-precision products), which doubles their memory.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from .parallel import product

# mlx-lm's model modules whose layers this forward pass reproduces (mistral loads as llama).
MODULES = ("mlx_lm.models.llama", "mlx_lm.models.qwen2", "mlx_lm.models.qwen3")


class Unsupported(Exception):
    """The model has a part the NumPy forward pass does not reproduce."""


MatMul = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class Linear:
    weight_t: np.ndarray  # (in, out): a transposed view of the (out, in) weight
    bias: np.ndarray | None

    def __call__(self, x: np.ndarray, matmul: MatMul = product) -> np.ndarray:
        y = matmul(x, self.weight_t)
        return y if self.bias is None else y + self.bias


@dataclass
class Layer:
    input_norm: np.ndarray
    post_norm: np.ndarray
    q: Linear
    k: Linear
    v: Linear
    o: Linear
    qk_norm: np.ndarray | None  # qwen3's q_norm and k_norm, one row per head (heads + kv)
    gate: Linear
    up: Linear
    down: Linear


@dataclass
class Weights:
    layers: list[Layer]
    embed: np.ndarray  # (vocab, hidden)
    norm: np.ndarray
    lm_head_t: np.ndarray  # (hidden, vocab)
    eps: float
    n_heads: int
    n_kv_heads: int
    head_dim: int
    scale: float
    rope_base: float
    rope_scale: float
    rope_traditional: bool
    dtype: mx.Dtype  # the model's own: caches handed back to MLX are converted to it
    matmul: MatMul = field(default=product)  # ``parallel.Workers``' matmul uses more cores

    @property
    def vocab_size(self) -> int:
        return int(self.lm_head_t.shape[1])


def as_numpy(array: mx.array) -> np.ndarray:
    """A float32 numpy view of ``array`` (a copy only when it is not float32 already)."""
    if array.dtype != mx.float32:
        array = array.astype(mx.float32)
    mx.eval(array)
    return np.asarray(array)


def _exact(module: Any, kind: type[nn.Module], what: str) -> Any:
    # Subclasses with the same math (engine/cpu_kernels.py's DecodeRMSNorm, DecodeRoPE) pass;
    # QuantizedLinear, Llama3RoPE and the like are not subclasses and do not.
    if not isinstance(module, kind):
        raise Unsupported(f"{what} is {type(module).__name__}, not {kind.__name__}")
    return module


def _linear(module: Any, what: str) -> Linear:
    _exact(module, nn.Linear, what)
    params = module.parameters()
    bias = params.get("bias")
    return Linear(as_numpy(params["weight"]).T, None if bias is None else as_numpy(bias))


def _norm(module: Any, what: str) -> tuple[np.ndarray, float]:
    _exact(module, nn.RMSNorm, what)
    return as_numpy(module.parameters()["weight"]), float(module.eps)


def _layer(block: Any, index: int) -> tuple[Layer, Any]:
    if getattr(block, "use_sliding", False):
        raise Unsupported(f"layer {index} uses sliding-window attention")
    attn, mlp = block.self_attn, block.mlp
    qk_norm = None
    if hasattr(attn, "q_norm"):
        q_norm, _ = _norm(attn.q_norm, "q_norm")
        k_norm, _ = _norm(attn.k_norm, "k_norm")
        qk_norm = np.stack([q_norm] * int(attn.n_heads) + [k_norm] * int(attn.n_kv_heads))
    layer = Layer(
        input_norm=_norm(block.input_layernorm, "input_layernorm")[0],
        post_norm=_norm(block.post_attention_layernorm, "post_attention_layernorm")[0],
        q=_linear(attn.q_proj, "q_proj"), k=_linear(attn.k_proj, "k_proj"),
        v=_linear(attn.v_proj, "v_proj"), o=_linear(attn.o_proj, "o_proj"), qk_norm=qk_norm,
        gate=_linear(mlp.gate_proj, "gate_proj"), up=_linear(mlp.up_proj, "up_proj"),
        down=_linear(mlp.down_proj, "down_proj"),
    )
    return layer, attn


def extract(model: nn.Module) -> Weights:
    """The model's weights for the NumPy forward pass; raises ``Unsupported`` with the reason."""
    if type(model).__module__ not in MODULES:
        raise Unsupported(f"architecture module {type(model).__module__}")
    inner = model.model
    args = model.args
    if getattr(inner, "sliding_window", None) and getattr(inner, "swa_idx", None) is not None:
        raise Unsupported("sliding-window attention")
    layers, attns = zip(*(_layer(block, i) for i, block in enumerate(inner.layers)), strict=True)
    first = attns[0]
    rope = _exact(first.rope, nn.RoPE, "rope")
    head_dim = int(first.q_proj.weight.shape[0]) // int(first.n_heads)
    if int(rope.dims) != head_dim:
        raise Unsupported(f"partial rotary embedding ({rope.dims} of {head_dim})")
    for attn in attns:
        other = _exact(attn.rope, nn.RoPE, "rope")
        if (other.dims, other.base, other.scale, other.traditional) != (
                rope.dims, rope.base, rope.scale, rope.traditional):
            raise Unsupported("rotary embeddings differ between layers")
    embed = _exact(inner.embed_tokens, nn.Embedding, "embed_tokens")
    embed_np = as_numpy(embed.parameters()["weight"])
    if getattr(args, "tie_word_embeddings", False):
        lm_head_t = embed_np.T
    else:
        head = _linear(model.lm_head, "lm_head")
        if head.bias is not None:
            raise Unsupported("lm_head has a bias")
        lm_head_t = head.weight_t
    norm, eps = _norm(inner.norm, "norm")
    return Weights(
        layers=list(layers), embed=embed_np, norm=norm, lm_head_t=lm_head_t, eps=eps,
        n_heads=int(first.n_heads), n_kv_heads=int(first.n_kv_heads), head_dim=head_dim,
        scale=float(first.scale), rope_base=float(rope.base), rope_scale=float(rope.scale),
        rope_traditional=bool(rope.traditional), dtype=embed.parameters()["weight"].dtype,
    )
