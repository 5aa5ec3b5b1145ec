"""Bursts of simultaneous streaming requests against two or more running servers, one burst at
a time, alternating between them: the wall time from the first request sent to the last stream
ended, per burst, and the ratio of each server's time to the first's, pair by pair. With
``--timeline``, every request's header, first-token and end times within its burst.

Meant for a before/after build of the same server on a noisy machine: a burst is short
(~1.5 s at 8 streams on the bench fixture), so neighbouring bursts see the same machine.

    python -m benchmarks.burst http://127.0.0.1:8821 http://127.0.0.1:8822 --streams 8 --pairs 12
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from dataclasses import dataclass

import httpx

from .load import chat_body


@dataclass
class Timeline:
    headers: float
    first_token: float | None
    end: float
    tokens: int


async def _one(client: httpx.AsyncClient, started: float, max_tokens: int) -> Timeline:
    first: float | None = None
    tokens = 0
    async with client.stream("POST", "/v1/chat/completions", json=chat_body(max_tokens)) as reply:
        headers = time.perf_counter() - started
        async for line in reply.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            choices = json.loads(line[6:]).get("choices") or []
            delta = (choices[0].get("delta") or {}) if choices else {}
            if delta.get("content") or delta.get("reasoning_content"):
                tokens += 1
                if first is None:
                    first = time.perf_counter() - started
    return Timeline(headers, first, time.perf_counter() - started, tokens)


async def burst(base_url: str, streams: int, max_tokens: int) -> tuple[float, list[Timeline]]:
    """One burst of ``streams`` requests on fresh connections: (wall seconds, timelines)."""
    limits = httpx.Limits(max_connections=streams + 4)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits) as client:
        started = time.perf_counter()
        timelines = await asyncio.gather(*(_one(client, started, max_tokens)
                                           for _ in range(streams)))
        return time.perf_counter() - started, sorted(timelines, key=lambda t: t.end)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base_urls", nargs="+", help="servers, the first is the reference")
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--pairs", type=int, default=12, help="bursts per server")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--timeline", action="store_true", help="print every request's times")
    args = parser.parse_args()
    for url in args.base_urls:  # warm up: first-call compilation, the prompt cache
        asyncio.run(burst(url, args.streams, args.max_tokens))
    walls: dict[str, list[float]] = {url: [] for url in args.base_urls}
    for index in range(args.pairs):
        order = args.base_urls if index % 2 == 0 else args.base_urls[::-1]
        for url in order:
            wall, timelines = asyncio.run(burst(url, args.streams, args.max_tokens))
            walls[url].append(wall)
            if args.timeline:
                print(f"{url} wall {wall:.3f} s")
                for t in timelines:
                    first = f"{t.first_token:.3f}" if t.first_token is not None else "-"
                    print(f"  headers {t.headers:.3f}  first token {first}  end {t.end:.3f}"
                          f"  tokens {t.tokens}")
    reference = walls[args.base_urls[0]]
    for url, values in walls.items():
        ratios = [value / ref for value, ref in zip(values, reference, strict=True)]
        print(f"{url}: median burst {statistics.median(values):.3f} s; ÷ first server, per "
              f"pair: median {statistics.median(ratios):.3f} ({min(ratios):.3f}-"
              f"{max(ratios):.3f}), faster in {sum(r < 1 for r in ratios)} of {len(ratios)}")


if __name__ == "__main__":
    main()
