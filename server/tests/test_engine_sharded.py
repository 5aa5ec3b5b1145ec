"""The engine in its sharded mode, in one process: rank 0's ``ShardedModel`` on a one-rank group
(its broadcasts are identities), so every guard of the sharded path runs on the real fixture.
The two-rank run is ``tests/test_sharded.py`` (``nox -s sharded``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import mlx.core as mx
import pytest
from mlx_lm.generate import BatchGenerator

from mlxcel.engine import distributed, worker
from mlxcel.engine.loaded_model import LoadedModel
from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.generation import Finished, GenerationRequest, SamplingParams, TokenDelta


@pytest.fixture()
def sharded_engine(fixture_model: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    group = mx.distributed.init()
    assert group.size() == 1
    wrapped: list[distributed.ShardedModel] = []

    def load_wrapped(path: str, **kwargs: Any) -> LoadedModel:
        loaded = load_model(path, **kwargs)
        wrapped.append(distributed.ShardedModel(loaded.model, group))
        loaded.model = wrapped[-1]  # type: ignore[assignment]
        return loaded

    def no_batch(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the batch generator edits caches the followers never see")

    load_model = worker.load_model
    monkeypatch.setattr(worker, "load_model", load_wrapped)
    monkeypatch.setattr(BatchGenerator, "insert", no_batch)
    config = EngineConfig(model=fixture_model, parallel=4, cache_prompt=True)
    engine = Engine(distributed.sharded_engine_config(config))
    engine.start()
    assert engine.wait_ready(60), engine.load_error
    yield engine
    engine.stop()
    wrapped[0].stop()


async def _run(engine: Engine, prompt: tuple[int, ...]) -> tuple[tuple[int, ...], Finished]:
    request = GenerationRequest(prompt_tokens=prompt, max_tokens=12, ignore_eos=True,
                                sampling=SamplingParams(temperature=0.0))
    ids: list[int] = []
    async for event in engine.submit(request).events():
        if isinstance(event, TokenDelta):
            ids.extend(event.token_ids)
        else:
            return tuple(ids), event
    raise AssertionError("no Finished event")


def test_concurrent_requests_take_turns_on_the_solo_path(sharded_engine: Engine) -> None:
    assert sharded_engine.max_batch_size == 1 and sharded_engine.prompt_cache is None
    assert sharded_engine.model is not None
    prompt = tuple(sharded_engine.model.encode("Once upon a time"))

    async def four() -> list[tuple[tuple[int, ...], Finished]]:
        return await asyncio.gather(*(_run(sharded_engine, prompt) for _ in range(4)))

    outcomes = asyncio.run(four())
    assert all(done.reason == "length" and done.error is None for _, done in outcomes)
    assert all(done.cached_tokens == 0 for _, done in outcomes)
    assert len({ids for ids, _ in outcomes}) == 1 and len(outcomes[0][0]) == 12
