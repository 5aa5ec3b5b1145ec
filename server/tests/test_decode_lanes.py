"""Decode lanes (engine/numpy_decode/lanes.py, laned.py): the NumPy path's batch spread over
processes, each with its own copy of the weights. On the tiny fixture, in real lane
processes: the same greedy tokens as mlx-lm alone, in a batch, with sequences leaving and
joining mid-step; caches handed back hold exactly what was fed; a lane that dies fails the
batch's step with ``LaneError`` and the next batch starts it anew; the setting and its
automatic choice."""

from __future__ import annotations

import os
import pickle
import signal
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
import pytest
from mlx_lm import load
from mlx_lm.models.cache import make_prompt_cache

from mlxcel.engine.numpy_decode import extract
from mlxcel.engine.numpy_decode import lanes as lanes_module
from mlxcel.engine.numpy_decode.laned import LanedBatch
from mlxcel.engine.numpy_decode.lanes import (
    MAX_LANED_PARAMETERS,
    Lane,
    LaneError,
    Lanes,
    lane_count,
    start_lanes,
)
from mlxcel.engine.numpy_decode.packed_weights import nbytes, pack, unpack
from mlxcel.engine.numpy_decode.products import MIN_THREADED_PARAMETERS

from .greedy_reference import chat_prompt as _prompt
from .greedy_reference import drain as _drain
from .greedy_reference import mlx_greedy as _greedy

MODELS = Path(__file__).resolve().parents[2] / "fixtures" / "models"


@pytest.fixture(scope="module")
def loaded() -> tuple[Any, Any]:
    model, tokenizer = load(str(MODELS / "qwen3-tiny"))[:2]
    return model, tokenizer


@pytest.fixture(scope="module")
def laned(loaded: tuple[Any, Any]) -> Any:
    weights = extract(loaded[0])
    # Spreading from 0: every sequence to the emptiest lane in a process of its own, so that
    # a few sequences use both.
    lanes = start_lanes(weights, 2, spread_from=0)
    assert lanes is not None
    yield weights, lanes
    lanes.close()


PROMPTS = ("Tell me a story.", "What is 2 + 2?", "Name three colours of the sea.", "Say hello.")


def test_packed_weights_unpack_to_the_weights(loaded: tuple[Any, Any]) -> None:
    """What a lane receives: the skeleton pickled, the buffer's bytes into its own array."""
    weights = extract(loaded[0])
    packed = pack(weights)
    received = np.empty(packed.size, np.uint8)
    received[:] = np.frombuffer(packed.buffer.tobytes(), np.uint8)
    attached = unpack(pickle.loads(pickle.dumps(packed.skeleton)), received)
    for ours, theirs in ((weights.embed, attached.embed), (weights.lm_head_t, attached.lm_head_t),
                         (weights.layers[1].qkv.weight_t, attached.layers[1].qkv.weight_t),
                         (weights.layers[0].down.weight_t, attached.layers[0].down.weight_t)):
        np.testing.assert_array_equal(ours, theirs)
        assert not np.shares_memory(ours, theirs)  # a copy, in this process's own memory
    # A tied head stays a view of the embeddings, not a second copy.
    assert np.shares_memory(attached.lm_head_t, attached.embed) == np.shares_memory(
        weights.lm_head_t, weights.embed)
    assert attached.dtype is None and attached.eps == weights.eps
    assert packed.size <= nbytes(weights)


def test_greedy_tokens_are_mlx_lm_s_over_two_lanes(loaded: tuple[Any, Any], laned: Any) -> None:
    model, tokenizer = loaded
    prompts = [_prompt(tokenizer, text) for text in PROMPTS[:3]]
    expected = [_greedy(model, p, 24) for p in prompts]
    batch = LanedBatch(*laned, prefill_step_size=8)  # prompts read over several steps
    uids = batch.insert(prompts, [24] * 3)
    assert sorted(batch._sequences[uid].lane for uid in uids) == [1, 1, 2]
    responses = _drain(batch)
    for uid, tokens in zip(uids, expected, strict=True):
        assert [r.token for r in responses[uid]] == tokens
        assert [r.finish_reason for r in responses[uid]] == [None] * 23 + ["length"]
    assert all(lane.count == 0 and lane.in_flight is None for lane in laned[1])


def test_sequences_leaving_mid_step_and_joining_keep_every_other_sequence_s_tokens(
        loaded: tuple[Any, Any], laned: Any) -> None:
    """A sequence removed while its lane runs a step (its row is dropped), and one joining
    the same lane: every other sequence's tokens stay mlx-lm's, and the removed one's cache
    holds exactly the tokens it had fed."""
    model, tokenizer = loaded
    prompts = [_prompt(tokenizer, text) for text in PROMPTS]
    expected = [_greedy(model, p, 20) for p in prompts]
    batch = LanedBatch(*laned, prefill_step_size=64)
    uids = batch.insert(prompts[:3], [20, 20, 20])
    got: dict[int, list[int]] = {uid: [] for uid in uids}
    late = None
    for _ in range(60):
        for response in batch.next()[1]:
            got[response.uid].append(response.token)
        gone = batch._sequences.get(uids[1])
        if late is None and gone is not None and len(got[uids[1]]) >= 6 and \
                batch.lanes[gone.lane].in_flight is not None:
            fed = list(gone.fed)
            caches, held = batch.remove([uids[1]], return_prompt_caches=True)[uids[1]]
            assert held == fed and [int(c.offset) for c in caches] == [len(fed)] * len(caches)
            dropped = len(got[uids[1]])
            (late,) = batch.insert(prompts[3:], [20])
            got[late] = []
        if not len(batch):
            break
    assert late is not None and not len(batch)
    assert got[uids[0]] == expected[0] and got[uids[2]] == expected[2]
    assert got[uids[1]] == expected[1][:dropped] and got[late] == expected[3]


def test_a_cache_goes_into_a_lane_and_comes_back(loaded: tuple[Any, Any], laned: Any) -> None:
    """A prompt-cache hit continues in a lane from an MLX cache; a finished sequence hands back
    its keys and values as mlx-lm caches equal to MLX's own."""
    model, tokenizer = loaded
    prompt = _prompt(tokenizer, "What is 2 + 2?")
    cache = make_prompt_cache(model)
    model(mx.array(prompt[:-1])[None], cache=cache)
    batch = LanedBatch(*laned)
    (uid,) = batch.insert([prompt[-1:]], [6], caches=[cache], all_tokens=[prompt[:-1]])
    last = _drain(batch)[uid]
    assert [r.token for r in last] == _greedy(model, prompt, 6)
    assert last[-1].all_tokens == prompt + [r.token for r in last[:5]]
    keys = np.asarray(last[-1].prompt_cache[0].keys[..., :len(prompt) - 1, :])
    np.testing.assert_allclose(keys, np.asarray(cache[0].keys[..., :len(prompt) - 1, :]),
                               rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="tokens for a cache"):
        batch.insert([prompt[-1:]], [2], caches=[cache], all_tokens=[prompt[:-3]])


@pytest.mark.parametrize(("signal_sent", "error"), [
    (signal.SIGKILL, "lane 1 is gone"),  # it dies
    (signal.SIGSTOP, "lane 1 did not answer"),  # it neither answers nor dies
])
def test_a_lane_that_dies_or_hangs_fails_the_step_and_the_next_batch_starts_it_anew(
        loaded: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch, signal_sent: int,
        error: str) -> None:
    """Not a hang: the step of a batch whose lane died or stopped answering fails with
    ``LaneError`` (a hung lane after ``STEP_TIMEOUT``, while the other lane goes on
    answering), and the next batch (what the engine makes after a failed step) starts the lane
    anew and decodes mlx-lm's tokens."""
    import time

    monkeypatch.setattr(lanes_module, "STEP_TIMEOUT", 1.0)
    model, tokenizer = loaded
    weights = extract(model)
    lanes = start_lanes(weights, 2, spread_from=0)
    assert isinstance(lanes, Lanes)
    try:
        prompts = [_prompt(tokenizer, text) for text in PROMPTS[:2]]
        batch = LanedBatch(weights, lanes)
        batch.insert(prompts, [64, 64])
        batch.next()
        remote = lanes[1]
        assert isinstance(remote, Lane)
        os.kill(remote.process.pid, signal_sent)
        started = time.monotonic()
        with pytest.raises(LaneError, match=error):
            for _ in range(400):
                batch.next()
        assert time.monotonic() - started < 10
        again = LanedBatch(weights, lanes)
        assert remote.process.poll() is None and not remote.hung  # a new process
        uids = again.insert(prompts, [6, 6])
        tokens = _drain(again)
        assert [[r.token for r in tokens[uid]] for uid in uids] == [
            _greedy(model, p, 6) for p in prompts]
    finally:
        lanes.close()


def test_a_few_sequences_share_one_lane_and_more_spread(
        monkeypatch: pytest.MonkeyPatch, loaded: tuple[Any, Any], laned: Any) -> None:
    """Below ``spread_from`` sequences the server's own lane takes them all (stepping alone on
    every BLAS thread); from it, new ones go to the emptiest lane of its own process, and the
    server's lane hands over what it holds mid-generation: nobody's tokens change."""
    model, tokenizer = loaded
    monkeypatch.setattr(laned[1], "spread_from", 3)
    monkeypatch.setattr(laned[1], "threads", 2)
    weights, lanes = laned
    prompts = [_prompt(tokenizer, text) for text in (*PROMPTS, *PROMPTS[:3])]
    expected = [_greedy(model, p, 12) for p in prompts]
    batch = LanedBatch(weights, lanes)
    uids = batch.insert(prompts[:3], [12] * 3)
    assert [batch._sequences[uid].lane for uid in uids] == [0, 0, 0]
    assert lanes.threads_for(lanes[0]) == 2
    got: dict[int, list[int]] = {}
    for _ in range(3):
        for response in batch.next()[1]:
            got.setdefault(response.uid, []).append(response.token)
    more = batch.insert(prompts[3:], [12] * 4)
    assert [batch._sequences[uid].lane for uid in more] == [1, 2, 1, 2]
    assert lanes.threads_for(lanes[1]) == 1
    for response in batch.next()[1]:
        got.setdefault(response.uid, []).append(response.token)
    assert lanes[0].count == 0 and lanes[1].count + lanes[2].count == 7
    assert all(seq.lane in (1, 2) for seq in batch._sequences.values())
    for uid, responses in _drain(batch).items():
        got.setdefault(uid, []).extend(r.token for r in responses)
    assert [got[uid] for uid in uids + more] == expected


def test_lanes_follow_the_setting_and_the_model_size() -> None:
    assert lane_count(1, 10**7, cores=2) == 1
    assert lane_count(3, 10, cores=2) == 3
    assert lane_count(0, MIN_THREADED_PARAMETERS, cores=2) == 2
    assert lane_count(0, MIN_THREADED_PARAMETERS, cores=16) == 2
    assert lane_count(0, MIN_THREADED_PARAMETERS - 1, cores=2) == 1  # the tiny fixture's size
    assert lane_count(0, MAX_LANED_PARAMETERS + 1, cores=2) == 1
    assert lane_count(0, MIN_THREADED_PARAMETERS, cores=1) == 1
    # A server of fewer slots than --decode-lanes-from (12 by default) never spreads: no lanes
    # (-np 4, the default), unless the setting is lowered.
    assert lane_count(2, MIN_THREADED_PARAMETERS, cores=2, slots=11) == 1
    assert lane_count(0, MIN_THREADED_PARAMETERS, cores=2, slots=12) == 2
    assert lane_count(2, 10, cores=2, slots=4, spread_from=0) == 2


def test_no_lanes_below_two_or_where_the_copies_would_crowd_memory(
        loaded: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    weights = extract(loaded[0])
    assert start_lanes(weights, 1) is None
    monkeypatch.setattr(lanes_module, "available_memory", lambda: 3 * nbytes(weights))
    with caplog.at_level("WARNING", logger="mlxcel.engine"):
        assert start_lanes(weights, 2) is None
    assert "2 copies of the weights" in caplog.text
