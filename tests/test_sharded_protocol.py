"""The sharded-serving messages and guards, in one process (the two-rank run is
``tests/test_sharded.py``, ``nox -s sharded``)."""

from __future__ import annotations

import mlx.core as mx
import pytest

from mlxcel.engine import distributed


def test_a_single_process_is_not_sharded() -> None:
    assert distributed.sharding_group() is None
    assert not distributed.is_follower()
    with pytest.raises(RuntimeError):
        distributed.run_follower("unused")


def test_header_carries_op_cache_shape_and_dtype() -> None:
    inputs = mx.array([[1, 2, 3]], dtype=mx.uint32)
    header: list[int] = distributed._header(distributed.OP_CALL, 7, inputs).tolist()  # type: ignore[assignment]
    assert header[:5] == [distributed.OP_CALL, 7, 2, 1, 3]
    assert distributed._DTYPES[header[-1]] == mx.uint32
    assert len(header) == distributed._HEADER


@pytest.mark.parametrize("bad", [mx.zeros((1, 1, 1, 1, 1), dtype=mx.int32),
                                 mx.zeros((2,), dtype=mx.float32)])
def test_header_refuses_what_it_cannot_describe(bad: mx.array) -> None:
    with pytest.raises(ValueError):
        distributed._header(distributed.OP_CALL, 0, bad)


def test_sharded_engine_config_is_one_solo_request_at_a_time_without_prompt_cache() -> None:
    from mlxcel.engine.worker import EngineConfig

    config = distributed.sharded_engine_config(EngineConfig(model="m", parallel=4))
    assert (config.parallel, config.cache_prompt, config.solo_only) == (1, False, True)
    assert config.max_queue == 16  # the queue the user's --parallel asked for: wait, not 503
    with pytest.raises(ValueError):
        EngineConfig(model="m", parallel=2, solo_only=True)


def test_a_mirrored_cache_refuses_to_be_copied() -> None:
    import copy

    cache = distributed.MirroredCache([])
    cache.cache_id = 3
    with pytest.raises(TypeError):
        copy.deepcopy(cache)
