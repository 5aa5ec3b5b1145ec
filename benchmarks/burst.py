"""Bursts of simultaneous streaming requests against two or more running servers, one burst at
a time, alternating between them: the wall time from the first request sent to the last stream
ended, per burst, and the ratio of each server's time to the first's, pair by pair. With
``--timeline``, every request's header, first-token and end times (from ``load.one_request``,
counted from its sending; a burst sends all its requests at once).

Meant for a before/after build of the same server on a noisy machine: a burst is short
(~1.5 s at 8 streams on the bench fixture), so neighbouring bursts see the same machine.

    python -m benchmarks.burst http://127.0.0.1:8821 http://127.0.0.1:8822 --streams 8 --pairs 12
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

import httpx

from .load import RequestResult, chat_body, one_request


async def burst(base_url: str, streams: int, max_tokens: int) -> tuple[float, list[RequestResult]]:
    """One burst of ``streams`` requests on fresh connections: (wall seconds, each request's
    result, by the time its stream ended)."""
    limits = httpx.Limits(max_connections=streams + 4)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits) as client:
        started = time.perf_counter()
        results = await asyncio.gather(*(one_request(client, chat_body(max_tokens))
                                         for _ in range(streams)))
        wall = time.perf_counter() - started
        return wall, sorted(results, key=lambda r: r.end if r.end is not None else wall)


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
            wall, results = asyncio.run(burst(url, args.streams, args.max_tokens))
            walls[url].append(wall)
            failed = [r.error for r in results if not r.ok]
            if failed:
                print(f"{url}: {len(failed)} of {len(results)} requests failed: {failed[0]}")
            if args.timeline:
                print(f"{url} wall {wall:.3f} s")
                for r in results:
                    print("  " + "  ".join(f"{name} {value:.3f}" if value is not None
                                           else f"{name} -" for name, value in
                                           (("headers", r.headers), ("first token", r.ttft),
                                            ("end", r.end))) + f"  tokens {r.tokens}")
    reference = walls[args.base_urls[0]]
    for url, values in walls.items():
        ratios = [value / ref for value, ref in zip(values, reference, strict=True)]
        print(f"{url}: median burst {statistics.median(values):.3f} s; ÷ first server, per "
              f"pair: median {statistics.median(ratios):.3f} ({min(ratios):.3f}-"
              f"{max(ratios):.3f}), faster in {sum(r < 1 for r in ratios)} of {len(ratios)}")


if __name__ == "__main__":
    main()
