"""The NumPy decode path (engine/numpy_decode/, on by default on MLX's CPU backend) against mlx-lm
on the fixture models: the same logits to float32 rounding, the same greedy tokens as the MLX
path on every llama-family fixture with logprobs within ``LOGPROB_TOLERANCE``, prompts read in
chunks, caches handed to and from MLX, the models it must refuse, and the switch that turns it
off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mlx.core as mx
import mlx.nn as nn
import numpy as np
import pytest
from mlx_lm import load
from mlx_lm.generate import generate_step
from mlx_lm.models import gemma, llama
from mlx_lm.models.cache import make_prompt_cache

from mlxcel.cli import build_parser
from mlxcel.engine import numpy_decode
from mlxcel.engine.numpy_decode import NumpyBatch, Unsupported, extract, numpy_weights
from mlxcel.engine.numpy_decode import batch as batch_module
from mlxcel.engine.numpy_decode.forward import Piece, RopeTable, decode_few, decode_one, forward
from mlxcel.engine.numpy_decode.kv import KVPool
from mlxcel.engine.numpy_decode.products import (
    MIN_THREADED_PARAMETERS,
    blas_threads,
    padded_rows,
    product,
    product_for,
)
from mlxcel.engine.numpy_decode.weights import rotation_order
from mlxcel.engine.worker import EngineConfig

from .greedy_reference import chat_prompt as _prompt
from .greedy_reference import drain as _drain
from .greedy_reference import mlx_greedy as _greedy

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"
# The NumPy path's logprobs against the MLX path's, any token of the vocabulary, any step: the
# largest difference measured over the llama-family fixtures is 5e-5 (float32 sums in another
# order; greedy tokens never differed).
LOGPROB_TOLERANCE = 1e-4
LLAMA_FAMILY = sorted(
    d.name for d in MODELS.iterdir() if (d / "config.json").is_file()
    and json.loads((d / "config.json").read_text()).get("model_type") in (
        "llama", "mistral", "qwen2", "qwen3"))


@pytest.fixture(scope="module")
def loaded() -> tuple[Any, Any]:
    model, tokenizer = load(str(MODELS / "qwen3-tiny"))[:2]
    return model, tokenizer


def _pool(weights: Any) -> KVPool:
    return KVPool(len(weights.layers), weights.n_kv_heads, weights.head_dim, weights.key_order)


def test_logits_match_mlx_to_float32_rounding(loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    prompt = _prompt(tokenizer, "Tell me about the sea.")
    expected = np.asarray(model(mx.array(prompt)[None])[0, -1])
    weights = extract(model)
    pool = _pool(weights)
    got = forward(weights, RopeTable(weights), pool, [Piece(pool.add(), prompt)])[0]
    assert got.shape == expected.shape
    assert np.max(np.abs(got - expected)) < 1e-4 * max(1.0, float(np.max(np.abs(expected))))
    assert int(np.argmax(got)) == int(np.argmax(expected))


def test_a_single_stream_s_step_is_the_batch_step(loaded: tuple[Any, Any]) -> None:
    """``decode_one`` (one sequence, one token) computes what ``forward`` does for that piece:
    the same logits to float32 rounding, the same keys and values, and the weights untouched."""
    model, tokenizer = loaded
    prompt = _prompt(tokenizer, "Tell me about the sea.")
    weights = extract(model)
    embed = weights.embed.copy()
    pools, ropes = [_pool(weights), _pool(weights)], [RopeTable(weights), RopeTable(weights)]
    for pool, rope in zip(pools, ropes, strict=True):
        forward(weights, rope, pool, [Piece(pool.add(), prompt)])
    for token in (42, 7, 1000):
        batch_step = forward(weights, ropes[0], pools[0], [Piece(0, [token])])
        one = decode_one(weights, ropes[1], pools[1], 0, token)
        assert one.shape == batch_step.shape == (1, weights.lm_head_t.shape[1])
        assert np.max(np.abs(one - batch_step)) < 1e-5 * max(1.0, float(np.max(np.abs(one))))
    assert pools[0].lengths == pools[1].lengths == [len(prompt) + 3]
    end = len(prompt) + 3
    assert np.allclose(pools[0].keys[:, 0, :, :end], pools[1].keys[:, 0, :, :end], atol=1e-5)
    assert np.allclose(pools[0].values[:, 0, :, :end], pools[1].values[:, 0, :, :end], atol=1e-5)
    assert np.array_equal(weights.embed, embed)


def test_a_prompt_read_in_chunks_is_the_prompt_read_at_once(loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    weights = extract(model)
    rope = RopeTable(weights)
    prompt = _prompt(tokenizer, "Tell me a long story about a cat who learns to sail.")
    pool = _pool(weights)
    whole, chunked = pool.add(), pool.add()
    at_once = forward(weights, rope, pool, [Piece(whole, prompt)])[0]
    for start in range(0, len(prompt), 7):
        last = forward(weights, rope, pool, [Piece(chunked, prompt[start:start + 7])])[0]
    assert pool.lengths == [len(prompt)] * 2
    np.testing.assert_allclose(last, at_once, rtol=1e-5, atol=1e-5)
    n = len(prompt)
    np.testing.assert_allclose(pool.keys[:, chunked, :, :n], pool.keys[:, whole, :, :n],
                               rtol=1e-5, atol=1e-5)


def test_each_prompt_chunk_read_is_reported_until_the_first_token(
        loaded: tuple[Any, Any]) -> None:
    """As mlx-lm's ``BatchGenerator``: after each chunk of a prompt, (read, length) of the
    prompt inserted; a sequence already generating reports nothing."""
    _, tokenizer = loaded
    prompt = _prompt(tokenizer, "Tell me a long story about a cat who learns to sail.")
    batch = NumpyBatch(extract(loaded[0]), prefill_step_size=4)
    uid = batch.insert([prompt], [3])[0]
    seen, first = [], None
    while first is None:
        progress, responses = batch.next()
        seen += [p.progress for p in progress if p.uid == uid]
        first = next((r for r in responses if r.uid == uid), None)
    n = len(prompt)
    assert seen == [(min(read, n), n) for read in range(4, n + 4, 4)]
    progress, responses = batch.next()
    assert progress == [] and len(responses) == 1


def test_a_few_streams_step_is_the_batch_step(loaded: tuple[Any, Any]) -> None:
    """``decode_few`` (a few sequences of different lengths, one token each, in slots out of
    order) computes what ``forward`` does: the same logits to float32 rounding, the same keys,
    values and lengths, the weights untouched."""
    model, tokenizer = loaded
    prompts = [_prompt(tokenizer, text) for text in
               ("Tell me about the sea.", "Hi", "Name three colours of the sea, please.")]
    weights = extract(model)
    embed = weights.embed.copy()
    pools, ropes = [_pool(weights), _pool(weights)], [RopeTable(weights), RopeTable(weights)]
    for pool, rope in zip(pools, ropes, strict=True):
        for prompt in prompts:
            forward(weights, rope, pool, [Piece(pool.add(), prompt)])
    for tokens, slots in (([42, 7, 1000], [2, 0, 1]), ([5, 9], [1, 2]), ([11, 12, 13], [0, 1, 2])):
        batch_step = forward(weights, ropes[0], pools[0],
                             [Piece(slot, [token]) for slot, token in zip(slots, tokens,
                                                                            strict=True)])
        few = decode_few(weights, ropes[1], pools[1], slots, tokens)
        assert few.shape == batch_step.shape == (len(slots), weights.lm_head_t.shape[1])
        assert np.max(np.abs(few - batch_step)) < 1e-5 * max(1.0, float(np.max(np.abs(few))))
    assert pools[0].lengths == pools[1].lengths == [len(p) + n for p, n in zip(
        prompts, (2, 3, 3), strict=True)]
    for slot, end in enumerate(pools[0].lengths):
        assert np.allclose(pools[0].keys[:, slot, :, :end], pools[1].keys[:, slot, :, :end],
                           atol=1e-5)
        assert np.allclose(pools[0].values[:, slot, :, :end],
                           pools[1].values[:, slot, :, :end], atol=1e-5)
    assert np.array_equal(weights.embed, embed)


def test_greedy_tokens_are_mlx_lm_s_alone_and_in_a_batch(loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    prompts = [_prompt(tokenizer, text) for text in
               ("Tell me a story.", "What is 2 + 2?", "Name three colours of the sea.")]
    expected = [_greedy(model, p, 32) for p in prompts]
    batch = NumpyBatch(extract(model), prefill_step_size=16)  # prompts read over steps
    uids = batch.insert(prompts, [32] * 3)
    responses = _drain(batch)
    for uid, tokens in zip(uids, expected, strict=True):
        assert [r.token for r in responses[uid]] == tokens
        assert [r.finish_reason for r in responses[uid]] == [None] * 31 + ["length"]
    alone = NumpyBatch(extract(model))
    (uid,) = alone.insert(prompts[1:2], [32])
    assert [r.token for r in _drain(alone)[uid]] == expected[1]


@pytest.mark.parametrize("name", LLAMA_FAMILY)
def test_greedy_tokens_and_logprobs_are_the_mlx_path_s_on_every_llama_family_fixture(
        name: str) -> None:
    """What ``--numpy-decode`` changes on each fixture it serves: greedy tokens are the MLX
    path's (mlx-lm's ``generate_step``) token for token, in a batch with prompts read over
    steps, and every logprob of the vocabulary is within ``LOGPROB_TOLERANCE`` of MLX's."""
    model, tokenizer = load(str(MODELS / name))[:2]
    prompts = [_prompt(tokenizer, text) for text in ("Tell me a story.", "What is 2 + 2?")]
    expected = [list(generate_step(mx.array(p), model, max_tokens=24,
                                   sampler=lambda x: mx.argmax(x, axis=-1))) for p in prompts]
    batch = NumpyBatch(extract(model), prefill_step_size=8)
    uids = batch.insert(prompts, [24] * 2)
    responses = _drain(batch)
    for uid, steps in zip(uids, expected, strict=True):
        assert [r.token for r in responses[uid]] == [int(token) for token, _ in steps]
        worst = max(float(np.max(np.abs(np.asarray(r.logprobs) - np.asarray(logprobs))))
                    for r, (_, logprobs) in zip(responses[uid], steps, strict=True))
        assert worst < LOGPROB_TOLERANCE, f"{name}: logprobs differ by {worst:.2e}"


def test_the_numpy_path_is_on_by_default_and_can_be_turned_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """On MLX's CPU backend the engine decodes llama-family models in numpy unless
    ``--no-numpy-decode`` or ``MLXCEL_NUMPY_DECODE=0`` says otherwise; the weights are only
    extracted when the path is wanted."""
    monkeypatch.delenv("MLXCEL_NUMPY_DECODE", raising=False)
    assert EngineConfig(model="m").numpy_decode is True
    assert build_parser().parse_args([]).numpy_decode is True
    assert build_parser().parse_args(["--no-numpy-decode"]).numpy_decode is False
    assert build_parser().parse_args(["--numpy-decode"]).numpy_decode is True
    monkeypatch.setenv("MLXCEL_NUMPY_DECODE", "0")
    assert build_parser().parse_args([]).numpy_decode is False
    assert build_parser().parse_args(["--numpy-decode"]).numpy_decode is True
    monkeypatch.setenv("MLXCEL_NUMPY_DECODE", "1")
    assert build_parser().parse_args([]).numpy_decode is True
    model = load(str(MODELS / "qwen3-tiny"))[0]
    assert numpy_weights(model, wanted=False) is None
    assert numpy_weights(model, wanted=True) is not None


def test_a_copy_that_would_crowd_memory_keeps_mlx(monkeypatch: pytest.MonkeyPatch,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    """The path's float32 copy of the weights sits beside MLX's: a model whose copy would take
    over half the available memory decodes on MLX, and the log says why."""
    model = load(str(MODELS / "qwen3-tiny"))[0]
    needed = numpy_decode.copy_bytes(model)
    assert needed >= 4 * model.model.embed_tokens.weight.size
    monkeypatch.setattr(numpy_decode, "available_memory", lambda: 2 * needed - 4)
    with caplog.at_level("WARNING", logger="mlxcel.engine"):
        assert numpy_weights(model, wanted=True) is None
    assert "over half the available memory" in caplog.text
    monkeypatch.setattr(numpy_decode, "available_memory", lambda: 2 * needed)
    assert numpy_weights(model, wanted=True) is not None
    monkeypatch.setattr(numpy_decode, "available_memory", lambda: None)
    assert numpy_weights(model, wanted=True) is not None


def test_sequences_leaving_and_joining_keep_every_other_sequence_s_tokens(
        loaded: tuple[Any, Any]) -> None:
    """Slots are compacted when a sequence leaves (the last one moves into the hole), and a
    sequence may join while others decode: nobody's tokens change."""
    model, tokenizer = loaded
    prompts = [_prompt(tokenizer, text) for text in
               ("Tell me a story.", "What is 2 + 2?", "Name three colours of the sea.",
                "Say hello.")]
    expected = [_greedy(model, p, 30) for p in prompts]
    batch = NumpyBatch(extract(model), prefill_step_size=64)
    uids = batch.insert(prompts[:3], [5, 30, 30])
    got: dict[int, list[int]] = {uid: [] for uid in uids}
    late = dropped = None
    for step in range(40):
        for response in batch.next()[1]:
            got[response.uid].append(response.token)
        if step == 8:  # the first has left; the middle one leaves too, a fourth joins
            batch.remove([uids[1]])
            dropped = len(got[uids[1]])
            (late,) = batch.insert(prompts[3:], [30])
            got[late] = []
    assert late is not None and dropped is not None and not len(batch)
    assert batch.pool.count == 0 and batch.pool.nbytes > 0  # kept for the next arrivals
    assert got[uids[0]] == expected[0][:5]
    assert got[uids[1]] == expected[1][:dropped]
    assert got[uids[2]] == expected[2] and got[late] == expected[3]


def test_an_emptied_batch_keeps_its_pool_and_the_next_sequences_reuse_it(
        loaded: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """The next wave decodes in the kept arrays (no reallocation), over the positions the last
    wave left behind, and its tokens are still MLX's; a pool past KEEP_POOL_BYTES is given back."""
    model, tokenizer = loaded
    first = [_prompt(tokenizer, text) for text in ("Tell me a story.", "Say hello.")]
    second = [_prompt(tokenizer, text) for text in ("What is 2 + 2?", "Name a colour.")]
    expected = [_greedy(model, p, 12) for p in second]

    def run(batch: NumpyBatch, prompts: list[list[int]]) -> list[list[int]]:
        uids = batch.insert(prompts, [12] * len(prompts))
        got: dict[int, list[int]] = {uid: [] for uid in uids}
        while len(batch):
            for response in batch.next()[1]:
                got[response.uid].append(response.token)
        return [got[uid] for uid in uids]

    batch = NumpyBatch(extract(model), prefill_step_size=64)
    run(batch, first)
    kept = batch.pool.keys
    assert batch.pool.count == 0 and kept.size > 0
    assert run(batch, second) == expected
    assert batch.pool.keys is kept
    monkeypatch.setattr(batch_module, "KEEP_POOL_BYTES", 0)
    run(batch, first)
    assert batch.pool.nbytes == 0  # over the bound: given back


def test_a_finished_sequence_hands_back_its_cache_and_a_hit_continues_it(
        loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    weights = extract(model)
    prompt = _prompt(tokenizer, "Tell me a story.")
    expected = _greedy(model, prompt, 24)
    batch = NumpyBatch(weights)
    (uid,) = batch.insert([prompt], [10])
    last = _drain(batch)[uid][-1]
    assert last.finish_reason == "length" and last.prompt_cache is not None
    # The last token is handed out, not yet fed: the cache holds everything before it.
    assert last.all_tokens == prompt + expected[:9]
    assert [int(c.offset) for c in last.prompt_cache] == [len(prompt) + 9] * len(weights.layers)
    # Continue from the returned cache, as a prompt-cache hit does.
    again = NumpyBatch(weights)
    (uid,) = again.insert([expected[9:10]], [14], caches=[last.prompt_cache],
                          all_tokens=[last.all_tokens])
    assert [r.token for r in _drain(again)[uid]] == expected[10:24]


def test_an_mlx_cache_is_read_and_removal_returns_what_was_fed(loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    prompt = _prompt(tokenizer, "What is 2 + 2?")
    cache = make_prompt_cache(model)
    model(mx.array(prompt[:-1])[None], cache=cache)
    batch = NumpyBatch(extract(model))
    (uid,) = batch.insert([prompt[-1:]], [8], caches=[cache], all_tokens=[prompt[:-1]])
    tokens = [r.token for r in batch.next()[1]] + [r.token for r in batch.next()[1]]
    assert tokens == _greedy(model, prompt, 2)
    removed = batch.remove([uid], return_prompt_caches=True)
    caches, held = removed[uid]
    assert held == prompt + tokens[:1] and len(batch) == 0
    keys = np.asarray(caches[0].keys[..., :len(prompt) - 1, :])
    np.testing.assert_allclose(keys, np.asarray(cache[0].keys[..., :len(prompt) - 1, :]),
                               rtol=0, atol=0)


def test_logprobs_are_read_only_when_asked_and_sum_to_one(loaded: tuple[Any, Any]) -> None:
    model, tokenizer = loaded
    batch = NumpyBatch(extract(model))
    batch.insert([_prompt(tokenizer, "Hi")], [2])
    (response,) = batch.next()[1]
    assert "logprobs" not in response.__dict__  # a cached_property not computed yet
    logprobs = np.asarray(response.logprobs)
    assert abs(float(np.exp(logprobs).sum()) - 1.0) < 1e-4
    assert int(np.argmax(logprobs)) == response.token


@pytest.mark.parametrize("traditional", [False, True])
def test_rotary_embedding_matches_mlx(traditional: bool, loaded: tuple[Any, Any]) -> None:
    weights = extract(loaded[0])
    weights.rope_scale = 0.5
    x = np.random.default_rng(0).standard_normal((5, 4, weights.head_dim)).astype(np.float32)
    positions = np.array([0, 1, 2, 700, 30000])
    order = rotation_order(weights.head_dim, traditional)  # the forward's feature order
    if order is None:
        got = RopeTable(weights).at(positions)(x)
    else:
        turned = RopeTable(weights).at(positions)(np.ascontiguousarray(x[..., order]))
        got = turned[..., np.argsort(order)]
    for row, position in enumerate(positions):
        expected = mx.fast.rope(mx.array(x[row:row + 1].transpose(1, 0, 2))[None],
                                weights.head_dim, traditional=traditional,
                                base=weights.rope_base, scale=0.5, offset=int(position))
        np.testing.assert_allclose(got[row], np.asarray(expected[0, :, 0]), atol=2e-3)


def test_models_it_cannot_reproduce_keep_mlx_lm(loaded: tuple[Any, Any]) -> None:
    model, _ = loaded
    quantized, _ = load(str(MODELS / "qwen3-tiny"))[:2]
    nn.quantize(quantized, group_size=32, bits=8)
    with pytest.raises(Unsupported, match="QuantizedLinear"):
        extract(quantized)
    tiny = {"hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64,
            "num_attention_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-6, "vocab_size": 64,
            "num_key_value_heads": 1}
    with pytest.raises(Unsupported, match="architecture"):
        extract(gemma.Model(gemma.ModelArgs.from_dict({**tiny, "model_type": "gemma"})))
    sliding = llama.Model(llama.ModelArgs.from_dict(
        {**tiny, "model_type": "llama", "sliding_window": 8,
         "layer_types": ["sliding_attention", "full_attention"]}))
    with pytest.raises(Unsupported, match="sliding"):
        extract(sliding)
    # Every llama-family fixture the server ships is taken.
    for name in ("llama3-tiny", "mistral-tiny", "qwen3-coder-tiny", "qwen3-tiny-draft"):
        assert extract(load(str(MODELS / name))[0]).vocab_size > 0


def test_products_row_by_row_or_whole_give_the_same_result() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((16, 512)).astype(np.float32)
    w_t = rng.standard_normal((1536, 512)).astype(np.float32).T  # a transposed view
    for rows in (1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 15, 16):  # row by row, whole, or padded
        for matmul in (product, product_for(1), product_for(2)):
            got = matmul(x[:rows], w_t)
            assert got.shape == (rows, 1536)
            np.testing.assert_allclose(got, x[:rows] @ w_t, rtol=1e-5, atol=1e-4)
    assert product_for(1) is product
    threaded = product_for(2)
    assert getattr(threaded, "keywords", {}) == {"max_rows": 2, "threads": 2}
    assert [padded_rows(n, 2) for n in range(1, 18)] == [
        1, 2, 8, 8, 8, 8, 8, 8, 9, 10, 16, 16, 16, 16, 16, 16, 17]
    assert [padded_rows(n) for n in range(5, 16)] == [5, 6, 8, 8, 9, 12, 12, 12, 13, 16, 16]
    assert [padded_rows(n) for n in (29, 30, 31, 32, 34, 256)] == [29, 32, 32, 32, 34, 256]


def test_numpy_s_blas_threads_follow_the_model_size_and_the_setting() -> None:
    """A model worth it gets one BLAS thread per core (at most 8); a tiny one, whose step is
    bound by the event loop, keeps one; ``--threads`` above 0 overrides both."""
    assert blas_threads(26_000_000, cores=2) == 2
    assert blas_threads(26_000_000, 0, cores=64) == 8
    assert blas_threads(MIN_THREADED_PARAMETERS - 1, 0, cores=2) == 1
    assert blas_threads(230_000, 2, cores=2) == 2
    assert blas_threads(26_000_000, 1, cores=2) == 1
    assert blas_threads(26_000_000, 3, cores=2) == 3
    assert blas_threads(26_000_000, 0, cores=1) == 1


def test_the_path_sets_numpy_s_blas_threads_and_the_tokens_stay_the_same(
        caplog: pytest.LogCaptureFixture,
        loaded: tuple[Any, Any]) -> None:
    """``numpy_weights`` sets numpy's OpenBLAS to the threads chosen and says so; a batch on two
    threads (its head product large enough for OpenBLAS to split) gives the one-thread logits."""
    from threadpoolctl import threadpool_info

    def numpy_blas_threads() -> int:
        return next(int(lib["num_threads"]) for lib in threadpool_info()
                    if lib.get("internal_api") == "openblas" and "numpy" in lib["filepath"])

    model, _ = loaded
    results = []
    try:
        for threads in ("2", "1"):
            with caplog.at_level("INFO", logger="mlxcel.engine"):
                weights = numpy_weights(model, wanted=True, threads=int(threads))
            assert weights is not None
            assert numpy_blas_threads() == int(threads)
            assert f"numpy's OpenBLAS on {threads} thread(s)" in caplog.text
            pool = _pool(weights)
            pieces = [Piece(pool.add(), [5 + i, 6, 7]) for i in range(64)]
            results.append(forward(weights, RopeTable(weights), pool, pieces))
    finally:
        numpy_decode.limit_numpy_blas(1)
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-5)
    assert numpy_weights(model, wanted=True) is not None
    assert numpy_blas_threads() == 1  # qwen3-tiny is below MIN_THREADED_PARAMETERS
