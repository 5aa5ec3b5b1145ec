"""engine/gguf/: synthetic GGUFs written from the committed fixtures load as the mlx-lm model they
came from (tensor names, llama.cpp's rope permutation undone, tied embeddings, quantized layers,
the re-quantized path), with the tokenizer the fixture has."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gguf
import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx.utils import tree_flatten
from mlx_lm import load

from mlxcel.engine.gguf import load_gguf
from mlxcel.engine.gguf.requantize import mlx_bits, requantize
from mlxcel.engine.gguf.tensor_names import undo_rope_permutation

from .synthetic_gguf import LLAMA, QWEN3, llama_cpp_permute, random_fixture, write_fixture_gguf

T = gguf.GGMLQuantizationType
TEXT = "Hello there, how are you? 12345 tabs\tand  spaces\n"


def _reference(model_dir: Path, held: dict[str, np.ndarray]) -> tuple[nn.Module, Any]:
    """The fixture's mlx-lm model holding the values the file holds."""
    model, tokenizer = load(str(model_dir))  # type: ignore[misc]
    names = dict(tree_flatten(model.parameters()))
    model.load_weights([(k, mx.array(v)) for k, v in held.items() if k in names])
    return model, tokenizer


def _logits(model: nn.Module, ids: list[int]) -> np.ndarray:
    return np.array(model(mx.array([ids])).astype(mx.float32))


@pytest.mark.parametrize(("model_dir", "arch"), [(LLAMA, "llama"), (QWEN3, "qwen3")])
@pytest.mark.parametrize("qtype", [T.F32, T.F16])
def test_float_gguf_is_the_fixture_model(tmp_path: Path, model_dir: Path, arch: str,
                                         qtype: T) -> None:
    held = write_fixture_gguf(model_dir, tmp_path / "m.gguf", arch=arch, matrix_type=qtype)
    model, tokenizer, config = load_gguf(str(tmp_path / "m.gguf"))
    reference, ref_tokenizer = _reference(model_dir, held)
    ids = ref_tokenizer.encode(TEXT)
    assert tokenizer.encode(TEXT) == ids
    assert config["model_type"] == arch and config["tie_word_embeddings"] is True
    assert "lm_head" not in dict(tree_flatten(model.parameters()))
    np.testing.assert_allclose(_logits(model, ids), _logits(reference, ids), atol=1e-5)


@pytest.mark.parametrize("arch", ["qwen2", "gemma"])
def test_random_qwen2_and_gemma(tmp_path: Path, arch: str) -> None:
    """qwen2's attention biases; gemma's norms, which llama.cpp stores plus one."""
    model_dir = random_fixture(tmp_path / f"{arch}-tiny", arch)
    held = write_fixture_gguf(model_dir, tmp_path / "m.gguf", arch=arch)
    model, tokenizer, config = load_gguf(str(tmp_path / "m.gguf"))
    assert config["model_type"] == arch
    assert ("blk.0.attn_q.bias" in gguf_tensor_names(tmp_path / "m.gguf")) == (arch == "qwen2")
    reference, ref_tokenizer = _reference(model_dir, held)
    ids = ref_tokenizer.encode(TEXT)
    assert tokenizer.encode(TEXT) == ids
    np.testing.assert_allclose(_logits(model, ids), _logits(reference, ids), atol=1e-5)


def gguf_tensor_names(path: Path) -> set[str]:
    return {tensor.name for tensor in gguf.GGUFReader(str(path)).tensors}


@pytest.mark.parametrize(("qtype", "bits"), [(T.Q8_0, 8), (T.Q4_0, 4)])
def test_mlx_native_quantization_stays_quantized(tmp_path: Path, qtype: T, bits: int) -> None:
    held = write_fixture_gguf(LLAMA, tmp_path / "m.gguf", matrix_type=qtype)
    model, _, config = load_gguf(str(tmp_path / "m.gguf"))
    q_proj = model.model.layers[0].self_attn.q_proj
    assert isinstance(q_proj, nn.QuantizedLinear) and q_proj.bits == bits
    assert isinstance(model.model.embed_tokens, nn.QuantizedEmbedding)
    assert config["quantization"] == {"group_size": 32, "bits": bits, "mode": "affine"}
    reference, tokenizer = _reference(LLAMA, held)
    ids = tokenizer.encode(TEXT)
    # the file's values exactly, through MLX's quantized matmul rather than a float one
    np.testing.assert_allclose(_logits(model, ids), _logits(reference, ids), atol=0.05)


def test_types_mlx_does_not_keep_are_requantized(tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    held = write_fixture_gguf(QWEN3, tmp_path / "m.gguf", arch="qwen3", matrix_type=T.Q5_0)
    with caplog.at_level("INFO"):
        model, _, config = load_gguf(str(tmp_path / "m.gguf"))
    assert "converted 15 tensors (Q5_0 x 15 -> 5-bit)" in caplog.text
    assert model.model.layers[1].mlp.down_proj.bits == 5 and config["quantization"]["bits"] == 5
    reference, tokenizer = _reference(QWEN3, held)
    ids = tokenizer.encode(TEXT)
    got, want = _logits(model, ids), _logits(reference, ids)
    # re-quantizing adds an error about the size of Q5_0's own step: close, not equal
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 0.1


@pytest.mark.parametrize("qtype", [T.Q4_K, T.Q6_K])
def test_k_quants_dequantize_then_quantize(tmp_path: Path, qtype: T) -> None:
    """A K-quant (which gguf cannot write) from random blocks with sane super-block scales."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, size=(8, 512 // block * size), dtype=np.uint8)
    scale = np.frombuffer(np.array([0.01, 0.002], np.float16).tobytes(), np.uint8)
    blocks = raw.reshape(8, -1, size)
    if qtype == T.Q4_K:
        blocks[:, :, 0:4] = scale  # d, dmin lead the block
    else:
        blocks[:, :, size - 2:] = scale[:2]  # d ends the block
    writer = gguf.GGUFWriter(str(tmp_path / "k.gguf"), "llama")
    writer.add_tensor("blk.0.ffn_down.weight", blocks.reshape(8, -1), raw_dtype=qtype)
    for step in (writer.write_header_to_file, writer.write_kv_data_to_file,
                 writer.write_tensors_to_file, writer.close):
        step()
    tensor = gguf.GGUFReader(str(tmp_path / "k.gguf")).tensors[0]
    arrays = requantize("k.gguf", tensor.name, tensor)
    bits = mlx_bits(qtype)
    assert bits == {T.Q4_K: 4, T.Q6_K: 6}[qtype]
    back = mx.dequantize(arrays["blk.0.ffn_down.weight"], arrays["blk.0.ffn_down.scales"],
                         arrays["blk.0.ffn_down.biases"], group_size=32, bits=bits)
    want = gguf.quants.dequantize(tensor.data, qtype)
    assert back.shape == want.shape == (8, 512)
    error = np.linalg.norm(np.array(back.astype(mx.float32)) - want) / np.linalg.norm(want)
    assert error < 0.05


def test_rope_permutation_round_trip_on_floats_and_quantized_rows() -> None:
    rng = np.random.default_rng(3)
    heads, rows = 4, 64
    weight = rng.standard_normal((rows, 64)).astype(np.float32)
    permuted = llama_cpp_permute(weight, heads)
    assert not np.array_equal(permuted, weight)
    np.testing.assert_array_equal(np.array(undo_rope_permutation(mx.array(permuted), heads)),
                                  weight)
    # the rows of a quantized weight, its scales and biases move together
    w, scales, biases = mx.quantize(mx.array(weight), group_size=32, bits=4)
    moved = [undo_rope_permutation(mx.array(llama_cpp_permute(np.array(a), heads)), heads)
             for a in (w, scales, biases)]
    for got, want in zip(moved, (w, scales, biases), strict=True):
        assert mx.array_equal(got, want)
    bias = rng.standard_normal(rows).astype(np.float32)
    np.testing.assert_array_equal(
        np.array(undo_rope_permutation(mx.array(llama_cpp_permute(bias, heads)), heads)), bias)


@pytest.mark.parametrize("add_bos", [False, True])
def test_tokenizer_follows_the_file(tmp_path: Path, add_bos: bool) -> None:
    write_fixture_gguf(LLAMA, tmp_path / "m.gguf", add_bos=add_bos)
    _, tokenizer, config = load_gguf(str(tmp_path / "m.gguf"))
    _, fixture = load(str(LLAMA))  # type: ignore[misc]
    plain = fixture.encode("héllo 中文 😀 <|eot_id|>", add_special_tokens=False)
    assert tokenizer.encode("héllo 中文 😀 <|eot_id|>", add_special_tokens=False) == plain
    bos = fixture.bos_token_id
    assert tokenizer.encode("hi")[:1] == ([bos] if add_bos else fixture.encode("hi")[:1])
    messages = [{"role": "user", "content": "What is 2+2?"}]
    assert (tokenizer.apply_chat_template(messages, add_generation_prompt=True)
            == fixture.apply_chat_template(messages, add_generation_prompt=True))
    assert tokenizer.eos_token_ids == fixture.eos_token_ids
    assert config["eos_token_id"] == sorted(fixture.eos_token_ids)


def test_llama3_rope_scaling_from_rope_freqs(tmp_path: Path) -> None:
    """llama.cpp writes Llama 3.1's rope scaling as a ``rope_freqs`` tensor; the loader serves
    it as mlx-lm's ``llama3`` rope (factor 32 here, so the long wavelengths move)."""
    from mlxcel.engine.gguf.rope_scaling import LLAMA3_PARAMETERS, llama3_factors

    scaling = {"rope_type": "llama3", "factor": 32.0, **LLAMA3_PARAMETERS}
    factors = llama3_factors(16, 10000.0, 32.0, **LLAMA3_PARAMETERS).astype(np.float32)
    assert 1.0 < factors[-2] < 32.0 == factors[-1]  # a blended one and a scaled one
    held = write_fixture_gguf(LLAMA, tmp_path / "m.gguf", extra={"rope_freqs.weight": factors})
    model, _, config = load_gguf(str(tmp_path / "m.gguf"))
    assert config["rope_scaling"] == scaling
    scaled, tokenizer = load(str(LLAMA), model_config={"rope_scaling": scaling})  # type: ignore[misc]
    names = dict(tree_flatten(scaled.parameters()))
    scaled.load_weights([(k, mx.array(v)) for k, v in held.items() if k in names])
    plain, _ = _reference(LLAMA, held)
    ids = tokenizer.encode(TEXT * 4)
    np.testing.assert_allclose(_logits(model, ids), _logits(scaled, ids), atol=1e-5)
    assert not np.allclose(_logits(model, ids), _logits(plain, ids), atol=1e-3)


def test_rope_freqs_that_are_not_llama3s_are_refused(tmp_path: Path) -> None:
    from mlxcel.engine.gguf import UnsupportedGGUF

    odd = np.linspace(1, 3, 8).astype(np.float32)
    write_fixture_gguf(LLAMA, tmp_path / "m.gguf", extra={"rope_freqs.weight": odd})
    with pytest.raises(UnsupportedGGUF, match="is not Llama 3's rope scaling"):
        load_gguf(str(tmp_path / "m.gguf"))


def test_a_layer_packed_otherwise_is_named_in_the_config() -> None:
    """A Q4_1 file keeps its token embeddings in Q8_0: the config names that layer's own
    width, as mlx-lm's mixed-precision configs do (an mlx-lm that does not read widths off the
    arrays, 0.31 say, then loads the converted directory)."""
    from mlxcel.engine.gguf.model_builder import _quantization

    class Three(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b, self.c = (nn.Linear(64, 64, bias=False) for _ in range(3))

    weights: dict[str, mx.array] = {}
    for name, bits in (("a", 4), ("b", 8), ("c", 4)):
        packed, scales, biases = mx.quantize(mx.random.normal((64, 64)), group_size=32,
                                             bits=bits)
        weights |= {f"{name}.weight": packed, f"{name}.scales": scales,
                    f"{name}.biases": biases}
    model = Three()
    assert _quantization(model, weights) == {
        "group_size": 32, "bits": 4, "mode": "affine",
        "b": {"group_size": 32, "bits": 8, "mode": "affine"}}
    assert isinstance(model.b, nn.QuantizedLinear) and model.b.bits == 8
