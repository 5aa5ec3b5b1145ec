"""CPU time per generated token of the engine thread and of the event loop, in process: the
server's ``Engine`` (with the CLI's ``--stream-interval-ms``) and an asyncio consumer, greedy
requests of ``--max-tokens`` one after another on each of ``--streams`` concurrent consumers,
with no HTTP. Shows where a stream's time goes, apart from the HTTP side.

    python -m benchmarks.engine_tokens --fixture tiny --requests 20 --max-tokens 256 --rounds 3
    python -m benchmarks.engine_tokens --fixture tiny --streams 2   # two requests at a time
"""

from __future__ import annotations

import argparse
import asyncio
import json
import threading
import time
from typing import Any

from .cpu_time import stat_cpu_s
from .fixture import fixture_path

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixture", default="tiny", help="tiny or bench")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=1,
                        help="consumers at once, each sending --requests requests in turn")
    args = parser.parse_args()

    from mlxcel.engine.worker import Engine, EngineConfig
    from mlxcel.settings.catalog import default_of

    engine = Engine(EngineConfig(model=str(fixture_path(args.fixture)),
                                 parallel=max(args.streams, default_of("engine", "parallel")),
                                 stream_interval_ms=default_of("engine", "stream_interval_ms")))
    engine.start()
    try:
        if not engine.wait_ready(120):
            raise SystemExit(f"the engine did not load: {engine.load_error}")
        assert engine.model is not None
        prompt = tuple(engine.model.encode("Once upon a time"))
        asyncio.run(requests(engine, prompt, 2, args.max_tokens))  # warm-up
        rounds = []
        for _ in range(args.rounds):
            engine_cpu, loop_cpu = thread_cpu_s(ENGINE_THREAD), time.thread_time()
            wall = time.perf_counter()
            tokens = asyncio.run(streams(engine, prompt, args.requests, args.max_tokens,
                                         args.streams))
            wall = time.perf_counter() - wall
            rounds.append({
                "tok_s": round(tokens / wall, 1),
                "engine_cpu_ms_per_token": round(
                    (thread_cpu_s(ENGINE_THREAD) - engine_cpu) / tokens * 1e3, 4),
                "loop_cpu_ms_per_token": round((time.thread_time() - loop_cpu) / tokens * 1e3,
                                               4),
            })
    finally:
        engine.stop()
    print(json.dumps({"fixture": args.fixture, "streams": args.streams,
                      "requests": args.requests,
                      "max_tokens": args.max_tokens, "rounds": rounds}, indent=2))


if __name__ == "__main__":
    main()
