"""``nox -s bench``: mlxcel-server against in-process mlx-lm ``stream_generate`` and
``mlx_lm.server`` on the same fixture model; concurrency sweep, prompt-cache TTFT and
cancellation; JSON and a PNG per fixture under ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from .fixture import TINY, fixture_path
from .load import chat_body, one_request, sweep

RESULTS = Path(__file__).resolve().parent / "results"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def server(cmd: list[str], port: int, ready_path: str,
           started: list[subprocess.Popen[bytes]] | None = None) -> Iterator[str]:
    """Run ``cmd`` until the block ends; ``started`` receives the process (for its CPU time)."""
    log = open(RESULTS / f"server-{port}.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    if started is not None:
        started.append(proc)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {' '.join(cmd)}")
            try:
                if httpx.get(base + ready_path, timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def in_process(model_path: str, max_tokens: int, repeats: int = 3) -> float:
    from mlx_lm import load, stream_generate
    from mlx_lm.sample_utils import make_sampler

    loaded = load(model_path)
    model, tokenizer = loaded[0], loaded[1]
    prompt = tokenizer.apply_chat_template(
        [{"role": "user", "content": chat_body(1)["messages"][0]["content"]}],
        add_generation_prompt=True)
    best = 0.0
    for _ in range(repeats + 1):  # the first run warms up
        for response in stream_generate(model, tokenizer, prompt, max_tokens=max_tokens,
                                         sampler=make_sampler(0.0)):
            rate = response.generation_tps  # decode rate, prefill excluded
        best = max(best, rate)
    return round(best, 2)


def cache_ttft(base: str, prefix_tokens: int = 1000) -> dict[str, float]:
    """TTFT of a ~1000-token prompt cold, then with the same prefix and a new question."""
    corpus = (Path(TINY).parents[1] / "corpus" / "english.txt").read_text()
    words = (corpus.split() * 50)[: prefix_tokens * 3 // 4]
    prefix = " ".join(words)

    async def ttft(question: str, cache_prompt: bool) -> float:
        async with httpx.AsyncClient(base_url=base, timeout=300) as client:
            body = chat_body(4, prompt=prefix + "\n" + question, cache_prompt=cache_prompt)
            result = await one_request(client, body)
            return result.ttft or float("nan")

    httpx.post(base + "/v1/cache/reset")
    asyncio.run(ttft("Warm up?", False))
    cold = asyncio.run(ttft("What is the first word?", True))
    hit = asyncio.run(ttft("What is the last word?", True))
    return {"cold_s": round(cold, 4), "hit_s": round(hit, 4), "ratio": round(hit / cold, 3)}


def cancellation(base: str, streams: int = 32, cancel: int = 20) -> dict[str, Any]:
    """Open ``streams`` streams, drop ``cancel`` of them mid-stream, time until their slots
    are idle again."""

    async def run() -> dict[str, Any]:
        limits = httpx.Limits(max_connections=streams + 4)
        async with httpx.AsyncClient(base_url=base, timeout=300, limits=limits) as client:
            started = asyncio.Event()
            count = 0

            async def hold(stop: asyncio.Event) -> None:
                nonlocal count
                body = chat_body(2000, ignore_eos=True)
                async with client.stream("POST", "/v1/chat/completions", json=body) as resp:
                    seen = 0
                    async for _ in resp.aiter_lines():
                        seen += 1
                        if seen == 4:
                            count += 1
                            if count >= streams:
                                started.set()
                        if stop.is_set():
                            return

            stops = [asyncio.Event() for _ in range(streams)]
            tasks = [asyncio.create_task(hold(s)) for s in stops]
            await asyncio.wait_for(started.wait(), 120)
            t0 = time.perf_counter()
            for stop in stops[:cancel]:
                stop.set()
            while True:
                health = (await client.get("/health")).json()
                if health["batch"]["active_sequences"] <= streams - cancel:
                    break
                await asyncio.sleep(0.02)
            freed = time.perf_counter() - t0
            status = (await client.get("/health")).status_code
            for stop in stops:
                stop.set()
            await asyncio.gather(*tasks, return_exceptions=True)
            return {"streams": streams, "cancelled": cancel, "freed_s": round(freed, 3),
                    "health_status": status}

    return asyncio.run(run())


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name in ("mlxcel", "mlx_lm.server"):
        rows = results.get(name) or []
        ax.plot([r["concurrency"] for r in rows], [r["tok_per_s"] for r in rows], "o-",
                label=name)
    ax.axhline(results["in_process_tok_s"], ls="--", color="gray",
               label="mlx-lm stream_generate (1 stream)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("concurrent streams")
    ax.set_ylabel("aggregate tok/s")
    ax.set_title(f"{results['fixture']}: aggregate decode throughput")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def ratios(results: dict[str, Any]) -> dict[str, float]:
    ours = {r["concurrency"]: r["tok_per_s"] for r in results["mlxcel"]}
    peer = {r["concurrency"]: r["tok_per_s"] for r in results.get("mlx_lm.server") or []}
    single = next(r for r in results["mlxcel"] if r["concurrency"] == 1)
    out = {"single_vs_stream_generate": round(
        (single["stream_decode_tok_s"] or 0) / results["in_process_tok_s"], 3)}
    for level in (8, 32):
        if peer.get(level):
            out[f"c{level}_vs_mlx_lm_server"] = round(ours[level] / peer[level], 3)
    return out


def bench_fixture(name: str, path: str, args: argparse.Namespace) -> dict[str, Any]:
    levels = [int(x) for x in args.levels.split(",")]
    results: dict[str, Any] = {"fixture": name, "model": path, "max_tokens": args.max_tokens}
    print(f"[{name}] in-process stream_generate", flush=True)
    results["in_process_tok_s"] = in_process(path, args.max_tokens)
    port = free_port()
    cmd = [sys.executable, "-m", "mlxcel", "--model", path, "--port", str(port),
           "--parallel", str(max(levels)), "--max-queue", "256", "--log-level", "warning"]
    print(f"[{name}] mlxcel-server", flush=True)
    with server(cmd, port, "/health") as base:
        sweep(base, [1], 8, 1)  # warm up
        results["mlxcel"] = sweep(base, levels, args.max_tokens, args.per_worker)
        results["prompt_cache"] = cache_ttft(base)
        results["cancellation"] = cancellation(base, max(levels), min(20, max(levels) - 1))
    if not args.skip_peer:
        port = free_port()
        cmd = [sys.executable, "-m", "mlx_lm.server", "--model", path, "--port", str(port)]
        print(f"[{name}] mlx_lm.server", flush=True)
        with server(cmd, port, "/v1/models") as base:
            sweep(base, [1], 8, 1)
            results["mlx_lm.server"] = sweep(base, levels, args.max_tokens, args.per_worker)
    results["ratios"] = ratios(results)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--fixtures", default="tiny,bench", help="tiny, bench (28M params)")
    parser.add_argument("--levels", default="1,4,8,16,32")
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--per-worker", type=int, default=2)
    parser.add_argument("--skip-peer", action="store_true", help="do not run mlx_lm.server")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    for name in args.fixtures.split(","):
        path = fixture_path(name)
        results = bench_fixture(name, path, args)
        (RESULTS / f"{name}.json").write_text(json.dumps(results, indent=2))
        plot(results, RESULTS / f"{name}.png")
        print(json.dumps({k: results[k] for k in ("in_process_tok_s", "ratios",
                                                   "prompt_cache", "cancellation")}, indent=2))


if __name__ == "__main__":
    main()
