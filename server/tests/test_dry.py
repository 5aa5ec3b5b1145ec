"""DRY: one implementation behind every route (engine/dry.py), with llama.cpp's semantics."""

from __future__ import annotations

import random
from typing import Any

import mlx.core as mx
import pytest

from mlxcel.config import GenerationDefaults
from mlxcel.engine import dry
from mlxcel.engine.dry import (
    DryConfig,
    DryPenalty,
    breakers_from_strings,
    dry_config,
    dry_penalties,
    repeat_lengths,
)
from mlxcel.engine.loaded_model import LoadedModel
from mlxcel.engine.penalties import build_logits_processors
from mlxcel.families.llama.native_completion import NativeCompletionRequest, native_sampling
from mlxcel.generation import SamplingParams
from mlxcel.protocol.sampling_fields import OpenAISamplingFields


def breakers_from_ids(ids: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    return tuple((i,) for i in ids)


def lengths(history: list[int], allowed: int = 2, breakers: tuple[int, ...] = ()) -> dict[int, int]:
    config = DryConfig(multiplier=1.0, allowed_length=allowed,
                       breakers=breakers_from_ids(breakers))
    return repeat_lengths(history, config)


def naive_lengths(history: list[int], allowed: int, breakers: set[int]) -> dict[int, int]:
    """The definition, written the slow way: the common suffix of the context and of the
    context cut after each earlier position, overlapping allowed, never reaching back past
    the most recent breaker; the token after that position is the one penalised."""
    last = len(history) - 1
    limit = next((back for back in range(len(history)) if history[last - back] in breakers),
                 len(history))
    if limit < allowed:
        return {}
    found: dict[int, int] = {}
    for j in range(last):
        run = 0
        while run < limit and j - run >= 0 and history[j - run] == history[last - run]:
            run += 1
        if run >= allowed and run > found.get(history[j + 1], -1):
            found[history[j + 1]] = run
    return found


def test_the_token_that_would_extend_a_repeat_is_penalised() -> None:
    # ... 1 2 3 9 ... 1 2 3 -> 9 followed the earlier "1 2 3": a repeat of length 3
    config = DryConfig(multiplier=0.8, base=2.0, allowed_length=2)
    out = dry_penalties([1, 2, 3, 9, 5, 1, 2, 3], config)
    assert out == {9: pytest.approx(0.8 * 2.0 ** (3 - 2))}
    assert lengths([1, 2, 3, 9, 1, 2]) == {3: 2}
    assert lengths([1, 2, 3, 9, 1, 2], allowed=3) == {}


def test_short_repeats_and_breakers_are_free() -> None:
    assert lengths([1, 2, 9, 1, 2], allowed=3) == {}
    # a breaker inside the tail bounds the match below allowed_length
    assert lengths([7, 1, 2, 9, 7, 1, 2], allowed=3, breakers=(1,)) == {}
    assert lengths([1, 2, 3, 9, 1, 2], breakers=(1,)) == {}
    # the context ends on a breaker: nothing repeats
    assert lengths([4, 5, 0, 4, 5, 0], breakers=(0,)) == {}


def test_overlapping_runs_count_in_full() -> None:
    # The two earlier implementations disagreed here (3 vs 2): llama.cpp counts overlaps.
    assert lengths([5, 5, 5, 5]) == {5: 3}


def test_a_breaker_that_followed_the_run_is_penalised_too() -> None:
    assert lengths([1, 2, 0, 1, 2], breakers=(0,)) == {0: 2}


def test_a_multi_token_breaker_bounds_the_match_only_when_complete() -> None:
    breakers = ((7, 8),)  # token 7 breaks only when 8 follows it
    config = DryConfig(multiplier=1.0, breakers=breakers)
    assert repeat_lengths([7, 5, 2, 3, 9, 7, 5, 2, 3], config) == {9: 4}
    assert repeat_lengths([7, 8, 2, 3, 9, 7, 8, 2, 3], config) == {9: 2}
    assert repeat_lengths([7, 8, 2, 3, 9, 7, 8, 2, 3], DryConfig(1.0)) == {9: 4}


def test_matches_the_definition_on_random_contexts() -> None:
    rng = random.Random(7)
    for _ in range(300):
        history = [rng.randrange(4) for _ in range(rng.randrange(2, 40))]
        breakers = {b for b in range(4) if rng.random() < 0.2}
        allowed = rng.randrange(1, 4)
        assert lengths(history, allowed, tuple(breakers)) == naive_lengths(
            history, allowed, breakers), (history, breakers, allowed)


def test_long_repeats_match_the_definition_with_a_small_block(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Long runs (a looping reply) extend in doubling blocks, bounded by ``MATCH_BLOCK``
    elements at once; both must leave the lengths as the definition gives them."""
    monkeypatch.setattr(dry, "MATCH_BLOCK", 7)
    rng = random.Random(11)
    for _ in range(40):
        period = rng.randrange(1, 6)
        history = [rng.randrange(3) for _ in range(period)] * rng.randrange(20, 60)
        history += [rng.randrange(3) for _ in range(rng.randrange(0, 4))]
        breakers = {b for b in range(3) if rng.random() < 0.15}
        allowed = rng.randrange(1, 4)
        assert lengths(history, allowed, tuple(breakers)) == naive_lengths(
            history, allowed, breakers), (history, breakers, allowed)


def test_window_exponent_clamp_and_disabled() -> None:
    history = [1, 2, 3, 9, 1, 2, 3]
    assert dry_penalties(history, DryConfig(multiplier=0.0)) == {}
    assert dry_penalties(history, DryConfig(multiplier=1.0, window=3)) == {}
    assert set(dry_penalties(history, DryConfig(multiplier=1.0, window=0))) == {9}
    huge = dry_penalties([3] * 400, DryConfig(multiplier=1.0, base=1.75, allowed_length=1))
    assert 0 < huge[3] < float("inf")


def test_processor_lowers_only_the_penalised_logit() -> None:
    params = SamplingParams(dry_multiplier=1.0, dry_base=2.0, dry_allowed_length=2)
    out = DryPenalty(dry_config(params))(mx.array([1, 2, 3, 9, 1, 2]), mx.zeros((1, 10)))
    assert out[0, 3].item() == pytest.approx(-1.0)
    assert out[0, 4].item() == 0.0
    assert len(build_logits_processors(params)) == 1


def test_string_breakers_cover_containing_and_spanning_tokens() -> None:
    pieces = [(0, "a"), (1, "b:"), (2, "x\n"), (3, "<"), (4, "/s>"), (5, "<"), (6, "c")]
    encode = {"/s>": [4], "s>": [9]}.__getitem__
    found = breakers_from_strings([":", "\n", "</s>"], pieces, encode)
    assert set(found) == {(1,), (2,), (3, 4), (5, 4)}


def _model(tokenizer: Any) -> LoadedModel:
    return LoadedModel(name="t", path="t", model=None, tokenizer=tokenizer,  # type: ignore[arg-type]
                       config={}, context_size=512)


def test_chat_and_native_requests_resolve_to_the_same_dry(tokenizer: Any) -> None:
    """The OpenAI routes take token-id breakers and 0 = whole context (the reference);
    /completion takes llama-server's strings and -1 = whole context. Equivalent settings
    must give the engine the same DRY configuration."""
    model = _model(tokenizer)
    defaults = GenerationDefaults()
    native = native_sampling(NativeCompletionRequest.model_validate(
        {"prompt": "x", "dry_multiplier": 0.8, "dry_base": 1.5, "dry_allowed_length": 3,
         "dry_penalty_last_n": -1, "dry_sequence_breakers": [":"]}), model, defaults)
    ids = sorted(i for i in tokenizer.get_vocab().values() if ":" in tokenizer.decode([i]))
    assert ids, "the fixture tokenizer has no token containing ':'"
    chat = OpenAISamplingFields.model_validate(
        {"dry_multiplier": 0.8, "dry_base": 1.5, "dry_allowed_length": 3,
         "dry_penalty_last_n": 0, "dry_sequence_breakers": ids}).sampling(defaults)
    assert dry_config(native) == dry_config(chat)
    assert dry_config(native).enabled


def test_native_window_zero_disables_and_absent_fields_take_server_defaults(
    tokenizer: Any,
) -> None:
    model = _model(tokenizer)
    off = native_sampling(NativeCompletionRequest.model_validate(
        {"prompt": "x", "dry_multiplier": 1.0, "dry_penalty_last_n": 0}), model,
        GenerationDefaults())
    assert not dry_config(off).enabled
    served = native_sampling(NativeCompletionRequest.model_validate({"prompt": "x"}), model,
                             GenerationDefaults(dry_multiplier=0.9, dry_penalty_last_n=32))
    config = dry_config(served)
    assert (config.multiplier, config.window) == (0.9, 32)
    assert config.breakers, "llama-server's default string breakers apply"
