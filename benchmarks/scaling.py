"""How cost grows (``python -m benchmarks.scaling``): aggregate tok/s, TTFT and inter-token
latency at 1 to 64 concurrent streams, and TTFT and decode speed of one stream at prompt lengths
from 16 to nearly 4,096 tokens (the fixtures' context: llama-server refuses more);
``docs/benchmarks/scaling-<fixture>.{json,md,png}``.

    python -m benchmarks.scaling [--fixture tiny] [--servers mlxcel] [--llama-server PATH]
        [--streams 1,2,4,8,16,32,64] [--prompts 16,64,256,1024,3840] [--rounds 3]

The servers run at once and the rounds interleave, as in ``benchmarks.peers`` (same client,
same counting). Prompts of a given length are unique words drawn from the fixture's own
vocabulary (so no server answers from a prompt cache); the length reported is the server's
``usage.prompt_tokens`` (the chat template adds a few). Each prompt-length server gets one slot
with room for the longest prompt.

``--servers mlxcel,mlx-limit`` adds the MLX limit (``benchmarks.mlx_limit``: mlx-lm in process,
same weights and backend) to both parts, in the same rounds: its decode at each level, and its
time to the first token of the same prompts (the forward pass alone: no HTTP, template or
tokenizer). The page gives mlxcel's TTFT ÷ that in-process prefill per prompt length (issue 38:
≤ 1.1 at 4,096 prompt tokens).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .bench_servers import RunningServer, public_command, start_all
from .fixture import fixture_path, mlx_lm_dir
from .load import percentile
from .mlx_limit import NAME as LIMIT
from .mlx_limit import LimitWorker
from .peers import DEFAULT_BLAS, FIXTURES, Runner, loadavg, one_round, with_limit
from .peers_report import machine
from .stream_client import StreamResult, stream_post


def vocabulary_words(model: Path) -> list[str]:
    """Plain lowercase words that are single tokens of the fixture's tokenizer."""
    vocab = json.loads((model / "tokenizer.json").read_text())["model"]["vocab"]
    return sorted(t[1:] for t in vocab if t.startswith("Ġ") and t[1:].isalpha()
                  and t[1:].islower() and 3 <= len(t) <= 9)


def prompt_of(words: list[str], n: int, seed: int) -> str:
    """About ``n`` tokens of words, different for every seed."""
    pick = random.Random(seed)
    return f"{seed}: " + " ".join(pick.choice(words) for _ in range(max(1, n - 4)))


async def _one(server: RunningServer, prompt: str, max_tokens: int) -> StreamResult:
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True},
            **server.spec.fields}
    return await stream_post("127.0.0.1", server.port, "/v1/chat/completions", body)


def limit_prompt_row(worker: LimitWorker, prompts: list[str]) -> dict[str, Any]:
    answer = worker.prefill(prompts)
    return {"prompt_tokens": statistics.median(answer["prompt_tokens"]),
            "ttft_p50": percentile(answer["ttfts"], 0.5), "decode_tok_s": None, "errors": 0}


def prompt_round(servers: Sequence[Runner], lengths: list[int], words: list[str],
                 index: int, repeats: int, max_tokens: int) -> list[dict[str, Any]]:
    rows = []
    order = servers if index % 2 == 0 else servers[::-1]
    for length in lengths:
        for server in order:
            if isinstance(server, LimitWorker):
                row = limit_prompt_row(server, [prompt_of(words, length, 1000 * index + k)
                                                for k in range(repeats)])
                rows.append({"server": server.name, "round": index, "length": length, **row,
                             "loadavg": loadavg()})
                continue
            results = [asyncio.run(_one(server, prompt_of(words, length, 1000 * index + k),
                                        max_tokens)) for k in range(repeats)]
            ok = [r for r in results if r.ok and r.ttft is not None and r.end is not None]
            # The whole request, prompt included: the gap between a short reply's first and
            # last events is too small to time (tokens arrive grouped).
            decode = [r.tokens / r.end for r in ok if r.end]
            ttft = percentile([r.ttft for r in ok if r.ttft is not None], 0.5)
            rate = statistics.median(decode) if decode else None
            prompt_tokens = statistics.median([r.prompt_tokens or 0 for r in ok] or [0])
            rows.append({"server": server.name, "round": index, "length": length,
                         "prompt_tokens": prompt_tokens, "ttft_p50": ttft,
                         "decode_tok_s": rate, "errors": len(results) - len(ok),
                         "loadavg": loadavg()})
            print(f"  round {index + 1} prompt~{length:<5} {server.name:<16} ttft "
                  f"{(ttft or 0) * 1e3:8.1f} ms  decode {rate or 0:8.1f} tok/s  (prompt_tokens "
                  f"{prompt_tokens})", flush=True)
    return rows


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return round(statistics.median(values), 4) if values else None


def summarize(runs: list[dict[str, Any]], axis: str, keys: list[str]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        groups.setdefault((run["server"], run[axis]), []).append(run)
    return [{"server": server, axis: value, **{k: _median(rows, k) for k in keys},
             "errors": sum(r.get("errors", 0) for r in rows)}
            for (server, value), rows in sorted(groups.items(), key=lambda g: (g[0][1], g[0][0]))]


def prefill_ratios(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """mlxcel's TTFT ÷ the in-process prefill of the same prompts, per round, then the median
    (and range) over rounds, per prompt length."""
    by_key = {(r["server"], r["length"], r["round"]): r for r in runs}
    out = []
    for length in sorted({r["length"] for r in runs}):
        ratios = []
        for (server, size, index), ours in by_key.items():
            limit = by_key.get((LIMIT, size, index))
            if (server == "mlxcel" and size == length and limit and ours["ttft_p50"]
                    and limit["ttft_p50"]):
                ratios.append(ours["ttft_p50"] / limit["ttft_p50"])
        if ratios:
            tokens = [r["prompt_tokens"] for r in runs
                      if r["server"] == "mlxcel" and r["length"] == length]
            out.append({"length": length, "prompt_tokens": statistics.median(tokens),
                        "median": round(statistics.median(ratios), 3),
                        "min": round(min(ratios), 3), "max": round(max(ratios), 3)})
    return out


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f}"


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1e3:,.1f} ms"


def markdown(result: dict[str, Any]) -> str:
    lines = [f"# How cost grows ({result['started']})\n",
             f"Machine: {result['machine']}. Command: `{result['command']}`. Fixture "
             f"`{result['fixture']}`, {result['rounds']} interleaved rounds, medians; load "
             f"average {result['loadavg_before']} before, {result['loadavg_after']} after.\n",
             f"## Concurrent streams ({result['max_tokens']} tokens each)\n",
             "| streams | server | tok/s | TTFT p50 | TTFT p95 | inter-token p50 | p95 | errors |",
             "|---|---|---|---|---|---|---|---|"]
    for row in result["streams_summary"]:
        lines.append(f"| {row['level']} | {row['server']} | {row['tok_per_s'] or 0:,.1f} | "
                     f"{ms(row['ttft_p50'])} | {ms(row['ttft_p95'])} | {ms(row['itl_p50'])} | "
                     f"{ms(row['itl_p95'])} | {row['errors']} |")
    lines += ["", f"## Prompt length, one stream ({result['prompt_max_tokens']} tokens each)\n",
              "| prompt (asked) | server | prompt tokens | TTFT p50 | tok/s, prompt included | "
              "errors |",
              "|---|---|---|---|---|---|"]
    for row in result["prompts_summary"]:
        lines.append(f"| {row['length']} | {row['server']} | {row['prompt_tokens'] or 0:.0f} | "
                     f"{ms(row['ttft_p50'])} | {_rate(row['decode_tok_s'])} | "
                     f"{row['errors']} |")
    if result.get("prefill_ratio"):
        lines += ["", "mlxcel's TTFT ÷ MLX's in-process prefill of the same prompt (median, range "
                  "over rounds; issue 38's target: ≤ 1.1 at 4,096 prompt tokens):\n",
                  "| prompt (asked) | prompt tokens | mlxcel ÷ in process |", "|---|---|---|"]
        lines += [f"| {r['length']} | {r['prompt_tokens']:.0f} | **{r['median']:.2f}** "
                  f"({r['min']:.2f}–{r['max']:.2f}) |" for r in result["prefill_ratio"]]
    lines += ["", "| server | command |", "|---|---|"]
    lines += [f"| {name} | `{' '.join(cmd)}` |" for name, cmd in result["commands"].items()]
    return "\n".join(lines) + "\n"


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    panels = [(axes[0][0], "streams_summary", "level", "tok_per_s", "aggregate tok/s", 1),
              (axes[0][1], "streams_summary", "level", "ttft_p50", "TTFT p50 (ms)", 1e3),
              (axes[1][0], "prompts_summary", "prompt_tokens", "ttft_p50",
               "TTFT p50 (ms), one stream", 1e3),
              (axes[1][1], "prompts_summary", "prompt_tokens", "decode_tok_s",
               "tok/s of one request, prompt included", 1)]
    for ax, table, x, y, label, scale in panels:
        for server in sorted({r["server"] for r in result[table]}):
            rows = [r for r in result[table] if r["server"] == server and r[y] is not None]
            ax.plot([r[x] for r in rows], [r[y] * scale for r in rows], "o-", label=server)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent streams" if x == "level" else "prompt tokens")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"{result['fixture']} fixture, {result['machine']}, {result['started']}",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scaling",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument("--fixture", default="tiny")
    parser.add_argument("--servers", default="mlxcel")
    parser.add_argument("--llama-server", default=None)
    parser.add_argument("--streams", default="1,2,4,8,16,32,64")
    parser.add_argument("--prompts", default="16,64,256,1024,3840",
                        help="prompt lengths in words (the chat template adds ~10-120 tokens)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="requests per prompt length")
    parser.add_argument("--max-tokens", type=int, default=0, help="0: per fixture")
    parser.add_argument("--min-tokens", type=int, default=0, help="0: per fixture")
    parser.add_argument("--blas", default=DEFAULT_BLAS)
    parser.add_argument("--gguf-cache", type=Path,
                        default=Path.home() / ".cache" / "mlxcel" / "bench-models")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    model = Path(fixture_path(args.fixture)).resolve()
    names = args.servers.split(",")
    blas = None if args.blas == "none" or not Path(args.blas).exists() else args.blas
    executables = {"llama-server": args.llama_server}
    levels = [int(x) for x in args.streams.split(",")]
    lengths = [int(x) for x in args.prompts.split(",")]
    max_tokens = args.max_tokens or FIXTURES[args.fixture]["max_tokens"]
    min_tokens = args.min_tokens or FIXTURES[args.fixture]["min_tokens"]
    logs = Path(tempfile.mkdtemp(prefix="mlxcel-bench-scaling-"))
    result: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine(),
        "command": " ".join(["python -m benchmarks.scaling", *public_command(
            sys.argv[1:] if argv is None else argv)]),
        "fixture": args.fixture, "rounds": args.rounds, "max_tokens": max_tokens,
        "prompt_max_tokens": 64, "loadavg_before": loadavg(), "streams": [], "prompts": []}
    common = {"blas": blas, "executables": executables, "gguf_cache": args.gguf_cache,
              "extra_args": {}, "extra_env": {}}
    http = [n for n in names if n != LIMIT]
    servers = with_limit(start_all(http, model, max(levels), logdir=logs / "streams", **common),
                         names, model, blas, logs / "streams")
    result["commands"] = {s.name: public_command(s.spec.command) if isinstance(s, RunningServer)
                          else public_command([sys.executable, "-m", "benchmarks.mlx_limit",
                                               "--worker", str(s.model)]) for s in servers}
    try:
        for index in range(args.rounds):
            result["streams"] += one_round(servers, levels, index, max_tokens, min_tokens)
    finally:
        for server in servers:
            server.stop()
    words = vocabulary_words(mlx_lm_dir(model))
    slot_ctx = 4096  # the fixtures' own context; llama-server refuses more
    servers = with_limit(start_all(http, model, 1, logdir=logs / "prompts", slot_ctx=slot_ctx,
                                   **common), names, model, blas, logs / "prompts")
    try:
        for index in range(args.rounds):
            result["prompts"] += prompt_round(servers, lengths, words, index, args.repeats,
                                              result["prompt_max_tokens"])
    finally:
        for server in servers:
            server.stop()
    result["loadavg_after"] = loadavg()
    result["streams_summary"] = summarize(
        result["streams"], "level", ["tok_per_s", "ttft_p50", "ttft_p95", "itl_p50", "itl_p95"])
    result["prompts_summary"] = summarize(result["prompts"], "length",
                                          ["prompt_tokens", "ttft_p50", "decode_tok_s"])
    result["prefill_ratio"] = prefill_ratios(result["prompts"])
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"scaling-{args.fixture}"
    stem.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(result))
    plot(result, stem.with_suffix(".png"))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
