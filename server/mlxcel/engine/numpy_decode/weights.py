"""The weights of a dense llama-family model (mlx-lm's llama, mistral, qwen2, qwen3) as numpy
arrays, for the NumPy forward pass (``forward.py``), or the reason a model cannot take it.

Each layer's weights are rearranged once, into copies, for faster products and fewer numpy
calls per step (at one sequence a small model's step is bound by their number, not by the
arithmetic). The path holds its own float32 copy of every layer's products and of an untied
head; the embeddings stay a view of MLX's array when it is float32.

- every product's weight is stored transposed, ``(in, out)`` row-major: numpy's OpenBLAS
  multiplies 8-32 rows by it 5-25% faster than by a transposed view (benchmarks/README.md);
- the query, key and value projections are one product, and the gate and up projections one;
- each RMSNorm weight, times the square root of its width, is folded into the products that
  read the norm's output (the forward divides by ``sqrt(sum(x**2) + width * eps)``);
- the attention scale is folded into the queries (their norm weight, or their projection);
- the gate's weights are halved: ``silu(g) * u = (g/2) * (1 + tanh(g/2)) * u``;
- each head's query and key features are reordered so that the pairs the rotary embedding
  turns together sit side by side (``rotation_order``): a rotation is one complex product.
  Attention reads queries and keys only through their dot products, which the same order on
  both leaves unchanged; the KV pool stores keys in this order (``kv.py`` converts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np

from .products import MatMul, product

# mlx-lm's model modules whose layers this forward pass reproduces (mistral loads as llama).
MODULES = ("mlx_lm.models.llama", "mlx_lm.models.qwen2", "mlx_lm.models.qwen3")


class Unsupported(Exception):
    """The model has a part the NumPy forward pass does not reproduce."""



@dataclass
class Linear:
    weight_t: np.ndarray  # (in, out), row-major: the (out, in) weight transposed, copied
    bias: np.ndarray | None

    def __call__(self, x: np.ndarray, matmul: MatMul = product) -> np.ndarray:
        y = matmul(x, self.weight_t)
        return y if self.bias is None else y + self.bias


@dataclass
class Layer:
    """One decoder layer, its weights rearranged for fewer operations per step (see the module
    docstring): products side by side, norm weights, the attention scale and half of SwiGLU's
    gate folded into the products' weights, queries and keys in rotation order."""

    qkv: Linear  # queries, keys and values side by side
    o: Linear
    qk_norm: np.ndarray | None  # qwen3's q_norm and k_norm, one row per head (heads + kv)
    gate_up: Linear  # half the gate, then up
    down: Linear


@dataclass
class Weights:
    layers: list[Layer]
    embed: np.ndarray  # (vocab, hidden)
    norm: np.ndarray
    lm_head_t: np.ndarray  # (hidden, vocab)
    eps: float
    hidden: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    rope_base: float
    rope_scale: float
    dtype: mx.Dtype  # the model's own: caches handed back to MLX are converted to it
    key_order: np.ndarray | None  # the order of a head's key features in the KV pool
    matmul: MatMul = field(default=product)  # ``products.product_for(threads)``
    threads: int = 1  # the BLAS threads ``matmul`` is for

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


def _matrix(module: Any, what: str) -> tuple[np.ndarray, np.ndarray | None]:
    """An ``nn.Linear``'s ``(out, in)`` weight and its bias, float32."""
    _exact(module, nn.Linear, what)
    params = module.parameters()
    bias = params.get("bias")
    return as_numpy(params["weight"]), None if bias is None else as_numpy(bias)


def _linear(module: Any, what: str) -> Linear:
    weight, bias = _matrix(module, what)
    return Linear(np.ascontiguousarray(weight.T), bias)


def _side_by_side(parts: list[tuple[np.ndarray, np.ndarray | None]], scale: np.ndarray
                  ) -> Linear:
    """One product for several: their ``(out, in)`` weights stacked, each input feature's
    column times ``scale`` (a norm weight folded in)."""
    weight = np.concatenate([w for w, _ in parts], axis=0) * scale[None, :]
    biases = [b for _, b in parts]
    bias = None
    if any(b is not None for b in biases):
        bias = np.concatenate([np.zeros(w.shape[0], np.float32) if b is None else b
                               for (w, _), b in zip(parts, biases, strict=True)])
    return Linear(np.ascontiguousarray(weight.T), bias)


def rotation_order(head_dim: int, traditional: bool) -> np.ndarray | None:
    """The order of a head's features that puts each rotated pair side by side: traditional
    rotary embeddings turn (0, 1), (2, 3), ... already; half-split ones turn (i, i + d/2)."""
    if traditional:
        return None
    half = head_dim // 2
    return np.stack([np.arange(half), np.arange(half) + half], axis=1).reshape(-1)


def _per_head(part: tuple[np.ndarray, np.ndarray | None], heads: int, head_dim: int,
              order: np.ndarray | None, scale: float = 1.0
              ) -> tuple[np.ndarray, np.ndarray | None]:
    """A projection's output features reordered within each head, times ``scale``."""
    weight, bias = part
    if order is not None:
        rows = (np.arange(heads)[:, None] * head_dim + order[None, :]).reshape(-1)
        weight, bias = weight[rows], None if bias is None else bias[rows]
    if scale != 1.0:
        factor = np.float32(scale)
        weight, bias = weight * factor, None if bias is None else bias * factor
    return weight, bias


def _norm(module: Any, what: str) -> tuple[np.ndarray, float]:
    _exact(module, nn.RMSNorm, what)
    return as_numpy(module.parameters()["weight"]), float(module.eps)


def _layer(block: Any, index: int, order: np.ndarray | None) -> Layer:
    if getattr(block, "use_sliding", False):
        raise Unsupported(f"layer {index} uses sliding-window attention")
    attn, mlp = block.self_attn, block.mlp
    heads, kv_heads = int(attn.n_heads), int(attn.n_kv_heads)
    q_part = _matrix(attn.q_proj, "q_proj")
    head_dim = q_part[0].shape[0] // heads
    scale = float(attn.scale)
    qk_norm = None
    if hasattr(attn, "q_norm"):
        q_norm, _ = _norm(attn.q_norm, "q_norm")
        k_norm, _ = _norm(attn.k_norm, "k_norm")
        if order is not None:
            q_norm, k_norm = q_norm[order], k_norm[order]
        root = np.float32(np.sqrt(head_dim))
        qk_norm = np.stack([q_norm * root * np.float32(scale)] * heads + [k_norm * root] * kv_heads)
        scale = 1.0  # folded into the queries' norm weight instead
    input_norm, _ = _norm(block.input_layernorm, "input_layernorm")
    post_norm, _ = _norm(block.post_attention_layernorm, "post_attention_layernorm")
    root = np.float32(np.sqrt(input_norm.shape[0]))
    gate_w, gate_b = _matrix(mlp.gate_proj, "gate_proj")
    return Layer(
        qkv=_side_by_side([_per_head(q_part, heads, head_dim, order, scale),
                           _per_head(_matrix(attn.k_proj, "k_proj"), kv_heads, head_dim, order),
                           _matrix(attn.v_proj, "v_proj")], input_norm * root),
        o=_linear(attn.o_proj, "o_proj"), qk_norm=qk_norm,
        gate_up=_side_by_side([(gate_w * np.float32(0.5),
                                None if gate_b is None else gate_b * np.float32(0.5)),
                               _matrix(mlp.up_proj, "up_proj")], post_norm * root),
        down=_linear(mlp.down_proj, "down_proj"),
    )


def extract(model: nn.Module) -> Weights:
    """The model's weights for the NumPy forward pass; raises ``Unsupported`` with the reason."""
    if type(model).__module__ not in MODULES:
        raise Unsupported(f"architecture module {type(model).__module__}")
    inner = model.model
    args = model.args
    if getattr(inner, "sliding_window", None) and getattr(inner, "swa_idx", None) is not None:
        raise Unsupported("sliding-window attention")
    first = inner.layers[0].self_attn
    rope = _exact(first.rope, nn.RoPE, "rope")
    head_dim = int(first.q_proj.weight.shape[0]) // int(first.n_heads)
    if int(rope.dims) != head_dim:
        raise Unsupported(f"partial rotary embedding ({rope.dims} of {head_dim})")
    for block in inner.layers:
        other = _exact(block.self_attn.rope, nn.RoPE, "rope")
        if (other.dims, other.base, other.scale, other.traditional) != (
                rope.dims, rope.base, rope.scale, rope.traditional):
            raise Unsupported("rotary embeddings differ between layers")
    order = rotation_order(head_dim, bool(rope.traditional))
    layers = [_layer(block, i, order) for i, block in enumerate(inner.layers)]
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
    hidden = int(embed_np.shape[1])
    return Weights(
        layers=layers, embed=embed_np, norm=norm * np.float32(np.sqrt(hidden)),
        lm_head_t=lm_head_t, eps=eps, hidden=hidden,
        n_heads=int(first.n_heads), n_kv_heads=int(first.n_kv_heads), head_dim=head_dim,
        rope_base=float(rope.base), rope_scale=float(rope.scale),
        dtype=embed.parameters()["weight"].dtype, key_order=order,
    )
