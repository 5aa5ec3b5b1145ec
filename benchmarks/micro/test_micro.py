"""Micro-benchmarks (pytest-benchmark): the sampler chain, stop-string matching and streaming
detokenization, per token. Run with ``nox -s bench`` or ``pytest benchmarks/micro``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mlx.core as mx
import pytest

from mlxcel.engine.detokenizer import IncrementalDetokenizer
from mlxcel.engine.dry import DryConfig, DryPenalty
from mlxcel.engine.logprobs import LogprobRenderer
from mlxcel.engine.penalties import build_logits_processors
from mlxcel.engine.sampling import RequestSampler
from mlxcel.engine.slots import SequenceGuard
from mlxcel.engine.stops import StopMatcher
from mlxcel.generation import SamplingParams

MODEL = Path(__file__).resolve().parents[2] / "fixtures" / "models" / "qwen3-tiny"
VOCAB = 2048


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from mlx_lm.tokenizer_utils import load

    return load(MODEL)


@pytest.mark.parametrize("name,params", [
    ("greedy", SamplingParams(temperature=0.0)),
    ("default", SamplingParams()),
    ("p_less+xtc", SamplingParams(p_less=True, xtc_probability=0.5, xtc_threshold=0.05)),
])
def test_sampler_chain(benchmark: Any, name: str, params: SamplingParams) -> None:
    sampler = RequestSampler(params, VOCAB)
    logprobs = mx.log(mx.softmax(mx.random.normal((1, VOCAB)), axis=-1))
    mx.eval(logprobs)
    benchmark(lambda: mx.eval(sampler(logprobs)))


def test_penalties_and_dry(benchmark: Any) -> None:
    params = SamplingParams(repetition_penalty=1.1, presence_penalty=0.3, dry_multiplier=0.8)
    processors = build_logits_processors(params)
    tokens = mx.array(list(range(50)) * 8)
    logits = mx.random.normal((1, VOCAB))

    def run() -> None:
        out = logits
        for processor in processors:
            out = processor(tokens, out)
        mx.eval(out)

    benchmark(run)


@pytest.mark.parametrize("breakers", [(), ((7,),)], ids=["no-breaker", "breaker"])
def test_dry_on_a_long_history(benchmark: Any, breakers: tuple[tuple[int, ...], ...]) -> None:
    """One DRY step over a 4,096-token context (the processor's per-token cost at a long
    reply): without a breaker in it, every token of the window is matched against."""
    dry = DryPenalty(DryConfig(multiplier=0.8, breakers=breakers))
    tokens = mx.array((list(range(3, 60)) * 72)[:4096])
    logits = mx.random.normal((1, VOCAB))
    mx.eval(tokens, logits)
    benchmark(lambda: mx.eval(dry(tokens, logits)))


@pytest.mark.parametrize("batched", [False, True], ids=["per-row", "batched"])
def test_logprobs_of_a_batch_step(benchmark: Any, tokenizer: Any, batched: bool) -> None:
    """The logprobs of one batch step, 8 sequences asking for the top 5 each, rendered one
    row at a time (three host syncs per row) or all together (one)."""
    renderer = LogprobRenderer(tokenizer)
    rows = [mx.log(mx.softmax(mx.random.normal((VOCAB,)))) for _ in range(8)]
    mx.eval(rows)
    tokens: list[int] = mx.argmax(mx.stack(rows), axis=-1).tolist()  # type: ignore[assignment]
    if batched:
        benchmark(lambda: renderer.render_batch(rows, tokens, [5] * len(rows)))
    else:
        benchmark(lambda: [renderer.render(row, token, 5)
                           for row, token in zip(rows, tokens, strict=True)])


def test_batch_step_with_user_processors(benchmark: Any) -> None:
    """One ``BatchGenerator`` step of the fixture model with 8 sequences, each behind a
    user-supplied logits processor (a grammar's place) in its ``SequenceGuard``."""
    from mlx_lm import load
    from mlx_lm.generate import BatchGenerator

    model, _ = load(str(MODEL))[:2]
    batch = BatchGenerator(model, completion_batch_size=8, prefill_batch_size=8)
    guards = [SequenceGuard() for _ in range(8)]
    batch.insert([[1, 2, 3, 4]] * 8, max_tokens=[100_000] * 8,
                 logits_processors=[[guard.processor(lambda tokens, logits: logits * 1.0)]
                                    for guard in guards])
    for _ in range(3):  # prefill, then decoding
        batch.next()
    benchmark(batch.next)
    assert all(guard.error is None for guard in guards)


def test_stop_matching(benchmark: Any) -> None:
    pieces = ["Once", " upon", " a", " time", ",", " there", " was", " a", " cat", "."] * 20

    def run() -> None:
        matcher = StopMatcher(("</answer>", "\n\nUser:", "STOP"))
        for piece in pieces:
            matcher.feed(piece)
        matcher.flush()

    benchmark(run)


def test_detokenizer(benchmark: Any, tokenizer: Any) -> None:
    ids = tokenizer.encode("Hello, world! Ünïcödé 你好 🙂 " * 10)

    def run() -> None:
        detok = IncrementalDetokenizer(tokenizer)
        for token in ids:
            detok.add(token)
        detok.flush()

    benchmark(run)
