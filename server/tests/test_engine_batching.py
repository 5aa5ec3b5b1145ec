"""The batching engine on the fixture model: several requests at once, seeds independent of
the batch, a failing request alone fails, cancellation frees the slot, metrics counted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mlxcel.engine.worker import Engine, EngineConfig
from mlxcel.generation import Finished, GenerationRequest, SamplingParams, TokenDelta
from mlxcel.observability import engine_registry, render

MODEL = str(Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny")
HOT = SamplingParams(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=11)


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    """One engine over mlx-lm's ``BatchGenerator``, started once for the module."""
    eng = Engine(EngineConfig(model=MODEL, parallel=4))
    eng.start()
    assert eng.wait_ready(60), eng.load_error
    yield eng
    eng.stop()


def _request(engine: Engine, **fields: Any) -> GenerationRequest:
    assert engine.model is not None
    tokens = tuple(engine.model.encode("Once upon a time"))
    return GenerationRequest(tokens, fields.pop("max_tokens", 24), **fields)


async def _run(engine: Engine, request: GenerationRequest) -> tuple[str, Finished]:
    handle = engine.submit(request)
    parts = []
    async for event in handle.events():
        if isinstance(event, TokenDelta):
            parts.append(event.text)
        else:
            return "".join(parts), event
    raise AssertionError("no Finished")


def test_seed_gives_the_same_text_alone_and_in_a_batch(engine: Engine) -> None:
    seeded = _request(engine, sampling=HOT, ignore_eos=True)

    async def scenario() -> tuple[str, list[tuple[str, Finished]]]:
        alone, _ = await _run(engine, seeded)
        others = [_request(engine, sampling=SamplingParams(temperature=1.0, seed=s),
                           ignore_eos=True) for s in (1, 2, 3)]
        together = await asyncio.gather(*(_run(engine, r) for r in [*others, seeded]))
        return alone, together

    alone, together = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert alone and together[-1][0] == alone


def test_a_failing_processor_fails_only_its_request(engine: Engine) -> None:
    def factory() -> Any:
        def broken(tokens: Any, logits: Any) -> Any:
            raise RuntimeError("grammar exploded")
        return broken

    bad = _request(engine, logits_processor_factories=(factory,), ignore_eos=True)
    good = _request(engine, sampling=SamplingParams(temperature=0.0), ignore_eos=True)

    async def scenario() -> list[tuple[str, Finished]]:
        return await asyncio.gather(_run(engine, bad), _run(engine, good))

    (_, failed), (text, ok) = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert failed.reason == "error" and failed.error == "RuntimeError"
    assert ok.reason == "length" and ok.completion_tokens == 24 and text


def test_a_processor_returning_another_shape_fails_only_its_request(engine: Engine) -> None:
    """Nothing evaluates a processor's result early; one of the wrong shape is refused by the
    guard before the batch stacks the rows, so the others decode on."""
    def factory() -> Any:
        return lambda tokens, logits: logits[0]  # (vocab,) for (1, vocab)

    bad = _request(engine, logits_processor_factories=(factory,), ignore_eos=True)
    good = _request(engine, sampling=SamplingParams(temperature=0.0), ignore_eos=True)

    async def scenario() -> list[tuple[str, Finished]]:
        return await asyncio.gather(_run(engine, bad), _run(engine, good))

    (_, failed), (text, ok) = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert failed.reason == "error" and failed.error == "TypeError"
    assert ok.reason == "length" and ok.completion_tokens == 24 and text


def test_cancel_frees_the_slot_and_is_not_counted(engine: Engine) -> None:
    before = engine.metrics.requests_total

    async def scenario() -> Finished:
        handle = engine.submit(_request(engine, max_tokens=3000, ignore_eos=True))
        async for event in handle.events():
            if isinstance(event, Finished):
                return event
            handle.cancel()
        raise AssertionError("no Finished")

    finished = asyncio.run(asyncio.wait_for(scenario(), 30))
    # Cancelled at the first token the loop saw; the engine decodes on until it reads the flag
    # (a few ms a token here, so a descheduled event loop can cost a few dozen).
    assert finished.reason == "cancelled" and finished.completion_tokens < 200
    assert engine.active_sequences == 0
    assert engine.metrics.requests_total == before


def test_metrics_count_finished_requests_exactly(engine: Engine) -> None:
    before = engine.metrics.requests_total, engine.metrics.completion_tokens_total
    greedy = SamplingParams(temperature=0.0)
    counted = _request(engine, sampling=greedy, max_tokens=5, ignore_eos=True)
    uncounted = GenerationRequest(counted.prompt_tokens, 5, greedy, ignore_eos=True,
                                  count_in_metrics=False)

    async def scenario() -> None:
        await _run(engine, counted)
        await _run(engine, uncounted)

    asyncio.run(asyncio.wait_for(scenario(), 30))
    assert engine.metrics.requests_total == before[0] + 1
    assert engine.metrics.completion_tokens_total == before[1] + 5
    text = render(engine_registry(engine))
    assert f"mlxcel_requests_total {before[0] + 1}\n" in text
    assert "# TYPE mlxcel_batch_sequences_started counter" in text
    assert "# TYPE mlxcel_slots_total gauge\nmlxcel_slots_total 4\n" in text


@pytest.mark.parametrize("sampling", [SamplingParams(temperature=0.0), HOT],
                         ids=["greedy", "seeded"])
def test_a_solo_sequence_moves_into_the_batch_without_changing_its_text(
        engine: Engine, sampling: SamplingParams) -> None:
    """The first request decodes alone; a second arriving mid-way takes it into the batch
    (one forward pass per step), and its text is the text it produces alone."""
    first = _request(engine, sampling=sampling, max_tokens=40, ignore_eos=True)
    second = _request(engine, sampling=SamplingParams(temperature=1.0, seed=5), max_tokens=20,
                      ignore_eos=True)

    async def joined() -> tuple[str, int]:
        handle = engine.submit(first)
        parts: list[str] = []
        moves = engine.solo_moves
        other: asyncio.Task[tuple[str, Finished]] | None = None
        async for event in handle.events():
            if isinstance(event, Finished):
                assert event.reason == "length" and event.completion_tokens == 40
                break
            parts.append(event.text)
            if other is None and len(parts) >= 8:
                other = asyncio.create_task(_run(engine, second))
        assert other is not None
        _, finished = await other
        assert finished.reason == "length" and finished.completion_tokens == 20
        return "".join(parts), engine.solo_moves - moves

    alone, finished = asyncio.run(asyncio.wait_for(_run(engine, first), 60))
    moved, moves = asyncio.run(asyncio.wait_for(joined(), 60))
    assert finished.completion_tokens == 40 and alone
    assert moves == 1
    assert moved == alone


def test_a_burst_into_an_idle_engine_starts_together_in_the_batch(engine: Engine) -> None:
    """Requests arriving a millisecond apart at an idle engine all start in the batch: none
    begins alone on the single-sequence lane to be moved into the batch a step later."""
    burst = [_request(engine, max_tokens=6, ignore_eos=True) for _ in range(3)]

    async def scenario() -> list[tuple[str, Finished]]:
        tasks = []
        for request in burst:
            tasks.append(asyncio.create_task(_run(engine, request)))
            await asyncio.sleep(0.001)
        return await asyncio.gather(*tasks)

    moves = engine.solo_moves
    results = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert [finished.completion_tokens for _, finished in results] == [6, 6, 6]
    assert engine.solo_moves == moves


def test_logprobs_rendered_for_the_batch_are_the_request_s_own(
        engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three greedy requests in one batch, each asking for logprobs (one post-sampling): the
    step renders them together, and each gets its own token's and its own top list, as it
    gets them decoding alone."""
    assert engine._logprobs is not None
    render_batch = engine._logprobs.render_batch
    widths: list[int] = []

    def counted(rows: list[Any], *args: Any) -> Any:
        widths.append(len(rows))
        return render_batch(rows, *args)

    monkeypatch.setattr(engine._logprobs, "render_batch", counted)
    greedy = SamplingParams(temperature=0.0)
    plain = _request(engine, sampling=greedy, max_tokens=6, ignore_eos=True, logprobs=True,
                     top_logprobs=3)
    fewer = _request(engine, sampling=greedy, max_tokens=6, ignore_eos=True, logprobs=True,
                     top_logprobs=1)
    post = _request(engine, sampling=greedy, max_tokens=6, ignore_eos=True, logprobs=True,
                    top_logprobs=2, post_sampling_probs=True)

    async def collect(request: GenerationRequest) -> list[Any]:
        handle = engine.submit(request)
        out: list[Any] = []
        async for event in handle.events():
            if isinstance(event, TokenDelta):
                out.extend(event.logprobs)
        return out

    async def scenario() -> tuple[list[Any], list[list[Any]]]:
        alone = await collect(plain)
        together = await asyncio.gather(*(collect(r) for r in (plain, fewer, post)))
        return alone, list(together)

    alone, (batched, short, sampled) = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert len(alone) == len(batched) == len(short) == len(sampled) == 6
    for solo, mine, one, post_row in zip(alone, batched, short, sampled, strict=True):
        assert mine.token_id == solo.token_id == one.token_id == post_row.token_id
        assert [t.token_id for t in mine.top] == [t.token_id for t in solo.top]
        assert mine.logprob == pytest.approx(solo.logprob, abs=1e-4)
        assert [t.token_id for t in one.top] == [mine.top[0].token_id]
        # Greedy post-sampling: the drawn token is certain, every other impossible.
        assert post_row.logprob == 0.0 and [t.logprob for t in post_row.top] == [0.0, -9999.0]
    assert max(widths) == 3  # one rendering for the three rows of a step
