"""A load generator for any OpenAI-compatible server: streaming chat requests at a sweep of
concurrency levels, measuring aggregate tok/s, TTFT and inter-token latency (p50/p95), errors.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx

PROMPT = "Tell me a long story about a cat who learns to sail."


@dataclass
class RequestResult:
    ok: bool
    tokens: int = 0
    ttft: float | None = None
    gaps: list[float] = field(default_factory=list)
    error: str | None = None
    headers: float | None = None  # seconds from sending to the response's headers
    end: float | None = None  # seconds from sending to the end of the stream


@dataclass
class LevelResult:
    concurrency: int
    requests: int
    errors: int
    tokens: int
    wall_s: float
    tok_per_s: float
    ttft_p50: float | None
    ttft_p95: float | None
    itl_p50: float | None
    itl_p95: float | None
    stream_decode_tok_s: float | None  # one stream's decode rate: 1 / mean inter-token gap


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def chat_body(max_tokens: int, prompt: str = PROMPT, **extra: Any) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0.0, "stream": True, **extra}


async def one_request(client: httpx.AsyncClient, body: dict[str, Any]) -> RequestResult:
    started = time.perf_counter()
    last: float | None = None
    result = RequestResult(ok=False)
    try:
        async with client.stream("POST", "/v1/chat/completions", json=body) as response:
            result.headers = time.perf_counter() - started
            if response.status_code != 200:
                await response.aread()
                return RequestResult(ok=False, error=f"HTTP {response.status_code}")
            async for line in response.aiter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                chunk = json.loads(line[6:])
                choices = chunk.get("choices") or []
                delta = (choices[0].get("delta") or {}) if choices else {}
                # A reasoning delta is a generated token too (llama-server and mlxcel split
                # <think> blocks out of content).
                text = delta.get("content") or delta.get("reasoning_content")
                if not text:
                    continue
                now = time.perf_counter()
                if result.ttft is None:
                    result.ttft = now - started
                elif last is not None:
                    result.gaps.append(now - last)
                last = now
                result.tokens += 1
        result.ok = True
        result.end = time.perf_counter() - started
    except (httpx.HTTPError, ValueError) as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    return result


async def run_level(base_url: str, concurrency: int, per_worker: int, max_tokens: int,
                    extra: dict[str, Any]) -> LevelResult:
    limits = httpx.Limits(max_connections=concurrency + 4)
    async with httpx.AsyncClient(base_url=base_url, timeout=300, limits=limits) as client:
        async def worker() -> list[RequestResult]:
            return [await one_request(client, chat_body(max_tokens, **extra))
                    for _ in range(per_worker)]

        started = time.perf_counter()
        batches = await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    results = [r for batch in batches for r in batch]
    tokens = sum(r.tokens for r in results)
    ttfts = [r.ttft for r in results if r.ttft is not None]
    gaps = [g for r in results for g in r.gaps]
    return LevelResult(
        concurrency=concurrency, requests=len(results),
        errors=sum(not r.ok for r in results), tokens=tokens, wall_s=round(wall, 3),
        tok_per_s=round(tokens / wall, 2) if wall else 0.0,
        ttft_p50=percentile(ttfts, 0.5), ttft_p95=percentile(ttfts, 0.95),
        itl_p50=percentile(gaps, 0.5), itl_p95=percentile(gaps, 0.95),
        stream_decode_tok_s=round(len(gaps) / sum(gaps), 2) if gaps else None,
    )


def sweep(base_url: str, levels: list[int], max_tokens: int, per_worker: int = 2,
          extra: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    out = []
    for level in levels:
        result = asyncio.run(run_level(base_url, level, per_worker, max_tokens, extra or {}))
        print(f"  c={level:>2}  {result.tok_per_s:>8.1f} tok/s  ttft p50 "
              f"{(result.ttft_p50 or 0) * 1000:.0f} ms  itl p50 "
              f"{(result.itl_p50 or 0) * 1000:.1f} ms  errors {result.errors}", flush=True)
        out.append(asdict(result))
    return out


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description="Load-test an OpenAI-compatible server.")
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--levels", default="1,4,8,16,32")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--per-worker", type=int, default=2)
    parser.add_argument("--label", default=None, help="server name recorded with the results")
    parser.add_argument("--out", default=None, help="also write the results to this JSON file")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    results = {"name": args.label or args.base_url, "max_tokens": args.max_tokens,
               "levels": sweep(args.base_url, levels, args.max_tokens, args.per_worker)}
    text = json.dumps(results, indent=2)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
