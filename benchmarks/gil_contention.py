"""What a busy Python thread beside it costs MLX's decode, in process, and what the same work
in another process costs: the measurement behind issue 38's next step (an engine in its own
process, as vLLM's engine core).

mlx-lm's ``generate_step`` on the fixture, greedy, ``--tokens`` per run, the median of
``--runs`` runs in each condition, the conditions interleaved run by run:

- ``alone``: nothing else in this process;
- ``thread``: a thread of this process runs pure Python the whole time (as mlxcel-server's event
  loop does while it encodes and writes a stream), so the two share the GIL;
- ``process``: the same loop in a child process (its own interpreter, no GIL to share).

With ``--pace WORK_MS/PERIOD_MS`` the thread and the child do not spin: they run ``WORK_MS`` of
pure Python, then sleep out the rest of each ``PERIOD_MS`` (as a served stream's event loop
does: woken every ``--stream-interval-ms``, it encodes and writes the tokens gathered since).

    python -m benchmarks.gil_contention [--fixture tiny] [--tokens 512] [--runs 5]
    python -m benchmarks.gil_contention --pace 0.25/4

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


@dataclass(frozen=True)
class Pace:
    """``work_s`` of pure Python in every ``period_s``; ``period_s`` 0: no pause (spin)."""

    work_s: float = 0.0
    period_s: float = 0.0

    @classmethod
    def parse(cls, text: str) -> Pace:
        """``WORK_MS/PERIOD_MS``, e.g. ``0.25/4``."""
        work, _, period = text.partition("/")
        try:
            work_s, period_s = float(work) / 1e3, float(period) / 1e3
        except ValueError:
            work_s = period_s = 0.0
        if not 0 < work_s < period_s:
            raise ValueError(f"--pace {text!r}: expected WORK_MS/PERIOD_MS with "
                             "0 < WORK_MS < PERIOD_MS, e.g. 0.25/4")
        return cls(work_s, period_s)


SPIN = Pace()


def _spin(stop: Callable[[], bool], pace: Pace = SPIN) -> None:
    """Pure Python work until ``stop()``: what holds the GIL; with a ``pace``, ``work_s`` of
    it in each ``period_s`` and asleep (the GIL released) for the rest."""
    total = 0
    while not stop():
        began = time.perf_counter()
        while True:  # spinning (work_s 0): one pass between checks of stop()
            for i in range(100):
                total += i * i
            if time.perf_counter() - began >= pace.work_s:
                break
        if pace.period_s:
            time.sleep(max(0.0, pace.period_s - (time.perf_counter() - began)))


def _spin_until_set(event: Any, pace: Pace = SPIN) -> None:
    _spin(event.is_set, pace)


@contextmanager
def busy(condition: str, pace: Pace = SPIN) -> Iterator[None]:
    """Run the body beside nothing, a working thread, or a working child process."""
    if condition == "alone":
        yield
        return
    if condition == "thread":
        flag = threading.Event()
        thread = threading.Thread(target=_spin, args=(flag.is_set, pace), daemon=True)
        thread.start()
        try:
            yield
        finally:
            flag.set()
            thread.join()
        return
    context = multiprocessing.get_context("spawn")
    event = context.Event()
    child = context.Process(target=_spin_until_set, args=(event, pace), daemon=True)
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
        conditions: tuple[str, ...] = CONDITIONS, pace: Pace = SPIN) -> list[Result]:
    from mlx_lm import load

    loaded = load(model_path)
    model, tokenizer = loaded[0], loaded[1]
    prompt = list(tokenizer.encode("Tell me a long story about a lighthouse keeper."))
    decode_tok_s(model, prompt, min(tokens, 32))  # warm up
    results = {name: Result(name, []) for name in conditions}
    for index in range(runs):
        order = conditions if index % 2 == 0 else tuple(reversed(conditions))
        for name in order:
            with busy(name, pace):
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
    parser.add_argument("--pace", default="", metavar="WORK_MS/PERIOD_MS",
                        help="the thread and the child work this long in every period "
                             "instead of spinning, e.g. 0.25/4")
    parser.add_argument("--json", action="store_true", help="print the raw results as JSON")
    args = parser.parse_args(argv)
    try:
        pace = Pace.parse(args.pace) if args.pace else SPIN
    except ValueError as error:
        parser.error(str(error))
    results = run(fixture_path(args.fixture), args.tokens, args.runs, pace=pace)
    paced = (f"; the thread and the child work {pace.work_s * 1e3:g} ms in every "
             f"{pace.period_s * 1e3:g} ms" if pace.period_s else "; the thread and the child spin")
    print(f"switch interval {sys.getswitchinterval() * 1000:.1f} ms; {args.tokens} tokens "
          f"per run, {args.runs} runs per condition, interleaved{paced}\n")
    print(table(results))
    if args.json:
        print(json.dumps([asdict(r) | {"median": r.median} for r in results], indent=1))


if __name__ == "__main__":
    main()
