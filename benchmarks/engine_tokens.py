"""The engine without HTTP: tok/s and CPU time per generated token of the engine thread and
of the event loop, in process, beside the MLX limit on the same loaded weights. The server's
``Engine`` (the shipped settings) and an asyncio consumer run greedy requests of
``--max-tokens`` one after another on each of ``--streams`` concurrent consumers; in the same
round, interleaved, mlx-lm runs the same requests in process (``benchmarks.mlx_limit``:
``generate_step`` at one stream, ``BatchGenerator`` at more).

    python -m benchmarks.engine_tokens --fixture tiny --streams 1,8,32 --requests 4 --rounds 3
    python -m benchmarks.engine_tokens --fixture tiny --streams 2 --no-limit

The engine's tok/s ÷ the limit's is issue 38's ratio without the HTTP server: what the engine
loop (planning, slots, detokenizing, stop matching, the handles' wake-ups) costs by itself.
Set beside ``benchmarks.peers`` (the same ratio served over HTTP), it splits the served gap
into the engine's part and the HTTP side's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import threading
import time
from typing import Any

from .cpu_time import stat_cpu_s
from .fixture import fixture_path
from .mlx_limit import run_level

ENGINE_THREAD = "mlxcel-engine"


def thread_cpu_s(name: str) -> float:
    """User + system CPU seconds of this process's thread called ``name``."""
    thread = next(t for t in threading.enumerate() if t.name == name)
    return stat_cpu_s(f"/proc/self/task/{thread.native_id}/stat")


async def streams(engine: Any, prompt: tuple[int, ...], count: int, max_tokens: int,
                  width: int) -> int:
    """``width`` consumers at once, each running ``count`` requests; the tokens generated."""
    done = await asyncio.gather(*(requests(engine, prompt, count, max_tokens)
                                  for _ in range(width)))
    return sum(done)


async def requests(engine: Any, prompt: tuple[int, ...], count: int, max_tokens: int) -> int:
    """Run ``count`` greedy requests one after another; the tokens generated."""
    from mlxcel.generation import GenerationRequest, TokenDelta
    from mlxcel.generation.request import SamplingParams

    tokens = 0
    for _ in range(count):
        handle = engine.submit(GenerationRequest(prompt, max_tokens, ignore_eos=True,
                                                 sampling=SamplingParams(temperature=0.0)))
        async for event in handle.events():
            if isinstance(event, TokenDelta):
                tokens += len(event.token_ids)
    return tokens


def measure(model_path: str, levels: list[int], requests_per_stream: int, max_tokens: int,
            rounds: int, limit: bool = True) -> list[dict[str, Any]]:
    """One entry per level: each round's engine tok/s, CPU per token and (with ``limit``)
    the in-process limit's tok/s on the same requests, measured right after."""
    from mlxcel.engine.worker import Engine, EngineConfig
    from mlxcel.settings.catalog import default_of

    engine = Engine(EngineConfig(model=model_path,
                                 parallel=max(*levels, default_of("engine", "parallel"))))
    engine.start()
    results: list[dict[str, Any]] = []
    try:
        if not engine.wait_ready(120):
            raise SystemExit(f"the engine did not load: {engine.load_error}")
        assert engine.model is not None
        prompt = tuple(engine.model.encode("Once upon a time"))
        asyncio.run(requests(engine, prompt, 2, max_tokens))  # warm-up
        if limit:
            run_level(engine.model.model, [list(prompt)], 1, max_tokens)
        for level in levels:
            entry: dict[str, Any] = {"streams": level, "rounds": []}
            for _ in range(rounds):
                engine_cpu, loop_cpu = thread_cpu_s(ENGINE_THREAD), time.thread_time()
                wall = time.perf_counter()
                tokens = asyncio.run(streams(engine, prompt, requests_per_stream, max_tokens,
                                             level))
                wall = time.perf_counter() - wall
                measured: dict[str, Any] = {
                    "tok_s": round(tokens / wall, 1),
                    "engine_cpu_ms_per_token": round(
                        (thread_cpu_s(ENGINE_THREAD) - engine_cpu) / tokens * 1e3, 4),
                    "loop_cpu_ms_per_token": round(
                        (time.thread_time() - loop_cpu) / tokens * 1e3, 4),
                }
                if limit:
                    run = run_level(engine.model.model,
                                    [list(prompt)] * (level * requests_per_stream), level,
                                    max_tokens)
                    measured["limit_tok_s"] = round(run["tokens"] / run["wall_s"], 1)
                    measured["ratio"] = round(measured["tok_s"] / measured["limit_tok_s"], 3)
                entry["rounds"].append(measured)
            results.append(entry)
    finally:
        engine.stop()
    return results


def table(results: list[dict[str, Any]]) -> str:
    """Medians over rounds, one row per level (the ratio's range in brackets)."""
    lines = ["| streams | engine tok/s | MLX limit tok/s | engine ÷ limit | "
             "engine CPU ms/token | loop CPU ms/token |", "|---|---|---|---|---|---|"]
    for entry in results:
        rounds = entry["rounds"]

        def median(key: str, rounds: list[dict[str, Any]] = rounds) -> float:
            return float(statistics.median(r[key] for r in rounds))

        has_limit = all("ratio" in r for r in rounds)
        ratio = (f"{median('ratio'):.2f} ({min(r['ratio'] for r in rounds):.2f}-"
                 f"{max(r['ratio'] for r in rounds):.2f})") if has_limit else "-"
        limit_tok_s = f"{median('limit_tok_s'):.1f}" if has_limit else "-"
        lines.append(f"| {entry['streams']} | {median('tok_s'):.1f} | {limit_tok_s} | {ratio} | "
                     f"{median('engine_cpu_ms_per_token'):.3f} | "
                     f"{median('loop_cpu_ms_per_token'):.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fixture", default="tiny", help="tiny, bench or real")
    parser.add_argument("--requests", type=int, default=20, help="requests per stream")
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", default="1",
                        help="comma list of concurrent consumers, e.g. 1,8,32")
    parser.add_argument("--limit", action=argparse.BooleanOptionalAction, default=True,
                        help="measure the in-process MLX limit beside the engine")
    args = parser.parse_args()
    levels = [int(level) for level in args.streams.split(",")]
    results = measure(str(fixture_path(args.fixture)), levels, args.requests, args.max_tokens,
                      args.rounds, args.limit)
    print(json.dumps({"fixture": args.fixture, "requests_per_stream": args.requests,
                      "max_tokens": args.max_tokens, "levels": results}, indent=2))
    print(table(results))


if __name__ == "__main__":
    main()
