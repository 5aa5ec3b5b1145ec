"""What a busy Python thread beside it costs MLX's decode, in process, and what the same work
in another process costs: the measurement behind issue 38's next step (an engine in its own
process, as vLLM's engine core).

mlx-lm's ``generate_step`` on the fixture, greedy, ``--tokens`` per run, the median of
``--runs`` runs in each condition, the conditions interleaved run by run:

- ``alone``: nothing else in this process;
- ``thread``: a thread of this process runs pure Python the whole time (as mlxcel-server's event
  loop does while it encodes and writes a stream), so the two share the GIL;
- ``process``: the same loop in a child process (its own interpreter, no GIL to share).

    python -m benchmarks.gil_contention [--fixture tiny] [--tokens 512] [--runs 5]

One step of the tiny fixture is ~1 ms of Python issuing ~170 MLX operations; a thread that holds
the GIL for its 5 ms switch interval at a time (``sys.getswitchinterval``) takes most of that.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from .fixture import fixture_path

CONDITIONS = ("alone", "thread", "process")


@dataclass
class Result:
    condition: str
    tok_s: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.tok_s)


def _spin(stop: Callable[[], bool]) -> None:
    """Pure Python work until ``stop()``: what holds the GIL."""
    total = 0
    while not stop():
        for i in range(1000):
            total += i * i


def _spin_until_set(event: Any) -> None:
    _spin(event.is_set)


@contextmanager
def busy(condition: str) -> Iterator[None]:
    """Run the body beside nothing, a spinning thread, or a spinning child process."""
    if condition == "alone":
        yield
        return
    if condition == "thread":
        flag = threading.Event()
        thread = threading.Thread(target=_spin, args=(flag.is_set,), daemon=True)
        thread.start()
        try:
            yield
        finally:
            flag.set()
            thread.join()
        return
    context = multiprocessing.get_context("spawn")
    event = context.Event()
    child = context.Process(target=_spin_until_set, args=(event,), daemon=True)
    child.start()
    time.sleep(0.2)  # the child's interpreter is up and spinning
    try:
        yield
    finally:
        event.set()
        child.join(10)


def decode_tok_s(model: Any, prompt: list[int], tokens: int) -> float:
    """Tokens per second of one greedy ``generate_step`` run of ``tokens`` (prefill excluded)."""
    import mlx.core as mx
    from mlx_lm.generate import generate_step

    steps = generate_step(mx.array(prompt), model, max_tokens=tokens)
    next(steps)  # the prefill and the first token
    began = time.perf_counter()
    produced = 1
    for _ in steps:
        produced += 1
    return (produced - 1) / (time.perf_counter() - began)


def run(model_path: str, tokens: int, runs: int,
        conditions: tuple[str, ...] = CONDITIONS) -> list[Result]:
    from mlx_lm import load

    loaded = load(model_path)
    model, tokenizer = loaded[0], loaded[1]
    prompt = list(tokenizer.encode("Tell me a long story about a lighthouse keeper."))
    decode_tok_s(model, prompt, min(tokens, 32))  # warm up
    results = {name: Result(name, []) for name in conditions}
    for index in range(runs):
        order = conditions if index % 2 == 0 else tuple(reversed(conditions))
        for name in order:
            with busy(name):
                results[name].tok_s.append(round(decode_tok_s(model, prompt, tokens), 1))
    return list(results.values())


def table(results: list[Result]) -> str:
    alone = next((r.median for r in results if r.condition == "alone"), None)
    lines = ["| beside the decode | tok/s, median (runs) | ÷ alone |", "|---|---|---|"]
    for result in results:
        ratio = f"{result.median / alone:.2f}" if alone else "—"
        runs = ", ".join(f"{value:,.0f}" for value in result.tok_s)
        lines.append(f"| {result.condition} | {result.median:,.1f} ({runs}) | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gil_contention",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", default="tiny", choices=("tiny", "bench"))
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = parser.parse_args(argv)
    results = run(fixture_path(args.fixture), args.tokens, args.runs)
    print(f"switch interval {sys.getswitchinterval() * 1000:.1f} ms; {args.tokens} tokens "
          f"per run, {args.runs} runs per condition, interleaved\n")
    print(table(results))
    if args.json:
        print(json.dumps([asdict(r) | {"median": r.median} for r in results], indent=1))


if __name__ == "__main__":
    main()
