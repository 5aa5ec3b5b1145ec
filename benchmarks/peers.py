"""Servers side by side (``nox -s bench_peers``): mlxcel-server, mlx_lm.server, the MLX limit
(mlx-lm in process, ``benchmarks.mlx_limit``) and llama-server (plus vllm-mlx when given) on the
same weights, all running at once, measured in interleaved rounds; publishes
``docs/benchmarks/peers.{json,md,png}`` and prints the ratios against issue 38's targets.

    python -m benchmarks.peers --llama-server PATH [--fixtures tiny,bench,real] [--rounds 5]
        [--levels 1,8,32] [--out docs/benchmarks]

Fixtures: ``tiny`` (committed), ``bench`` (built into the cache) and ``real``
(SmolLM2-135M-Instruct Q4_1: mlxcel-server and llama-server serve the GGUF file itself,
mlx_lm.server, vllm-mlx and the MLX limit its ``mlxcel-convert`` directory, the same weights).

How a skeptic would want it measured:

- **All servers up at once, rounds interleaved.** Each round runs every level on every server,
  the servers' order reversed every other round, so a slow minute on this shared machine
  falls on all of them. Ratios are taken within a round and reported as the median (and
  range) over rounds; tok/s as the median (and range).
- **Long levels.** Each client sends requests back to back until the level has generated at
  least ``--min-tokens`` (several seconds of decode), two requests per client at least.
- **The same work.** Greedy, a fixed output length (``ignore_eos`` where a server supports it;
  mlx_lm.server does not, so its requests may stop early: tokens produced are reported), the
  same prompts in the same order for every server, each one unique (a number in front) so no
  server answers from a prompt cache.
- **The same counting.** One client (``stream_client``): tokens from the stream's ``usage``
  where the server reports it, else token-bearing events; TTFT to the first token-bearing
  event; inter-token gaps between them; errors counted, never silently dropped.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import peers_report as report
from .bench_servers import KNOWN, VARIANTS, RunningServer, public_command, start_all
from .fixture import fixture_path, mlx_lm_dir, parameter_count
from .load import PROMPT, percentile
from .mlx_limit import NAME as LIMIT
from .mlx_limit import LimitWorker, start_worker, summarize_run
from .stream_client import StreamResult, stream_post

DEFAULT_BLAS = "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"
# Output length and the least tokens a level generates, per fixture: the tiny model's steps
# are ~0.5 ms (per-step overhead), the bench model's 5-50 ms (compute).
# The real model decodes at 5-7 tok/s on one stream of this CPU: short requests.
FIXTURES = {"tiny": {"max_tokens": 256, "min_tokens": 8192},
            "bench": {"max_tokens": 128, "min_tokens": 1536},
            "real": {"max_tokens": 16, "min_tokens": 16}}


def chat_request(prompt: str, max_tokens: int, fields: dict[str, Any]) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": 0.0, "stream": True, "stream_options": {"include_usage": True},
            **fields}


def requests_per_client(level: int, max_tokens: int, min_tokens: int) -> int:
    return max(2, math.ceil(min_tokens / (level * max_tokens)))


def summarize_level(results: list[StreamResult], wall: float, level: int) -> dict[str, Any]:
    """One server at one level in one round."""
    ttfts = [r.ttft for r in results if r.ttft is not None]
    gaps = [g for r in results for g in r.gaps]
    tokens = sum(r.tokens for r in results if r.ok)
    errors = [r.error or f"status {r.status}" for r in results if not r.ok]
    return {
        "level": level, "requests": len(results), "errors": len(errors),
        "error_samples": sorted(set(errors))[:3], "tokens": tokens,
        "tokens_per_request": round(tokens / max(len(results) - len(errors), 1), 1),
        "counted_by": sorted({r.counted_by for r in results if r.ok}),
        "wall_s": round(wall, 3), "tok_per_s": round(tokens / wall, 2) if wall else 0.0,
        "ttft_p50": percentile(ttfts, 0.5), "ttft_p95": percentile(ttfts, 0.95),
        "itl_p50": percentile(gaps, 0.5), "itl_p95": percentile(gaps, 0.95),
    }


async def run_level(server: RunningServer, level: int, per_client: int, max_tokens: int,
                    tag: str) -> dict[str, Any]:
    fields = server.spec.fields

    async def client(index: int) -> list[StreamResult]:
        out = []
        for k in range(per_client):
            prompt = f"{tag}-{index * per_client + k}. {PROMPT}"
            out.append(await stream_post("127.0.0.1", server.port, "/v1/chat/completions",
                                         chat_request(prompt, max_tokens, fields)))
        return out

    cpu0 = server.cpu_s()
    started = time.perf_counter()
    batches = await asyncio.gather(*(client(i) for i in range(level)))
    wall = time.perf_counter() - started
    row = summarize_level([r for batch in batches for r in batch], wall, level)
    row["server_cpu_ms_per_token"] = round(
        1000 * (server.cpu_s() - cpu0) / max(row["tokens"], 1), 3)
    return row


def run_limit_level(worker: LimitWorker, level: int, per_client: int, max_tokens: int,
                    tag: str) -> dict[str, Any]:
    """The same level in process: the same prompts, ``level`` sequences in flight."""
    prompts = [f"{tag}-{i}. {PROMPT}" for i in range(level * per_client)]
    cpu0 = worker.cpu_s()
    row = summarize_run(worker.run(level, prompts, max_tokens), level, len(prompts))
    row["server_cpu_ms_per_token"] = round(
        1000 * (worker.cpu_s() - cpu0) / max(row["tokens"], 1), 3)
    return row


def loadavg() -> list[float]:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


Runner = RunningServer | LimitWorker


def measure(server: Runner, level: int, per_client: int, max_tokens: int,
            tag: str) -> dict[str, Any]:
    if isinstance(server, LimitWorker):
        return run_limit_level(server, level, per_client, max_tokens, tag)
    return asyncio.run(run_level(server, level, per_client, max_tokens, tag))


def one_round(servers: Sequence[Runner], levels: list[int], index: int, max_tokens: int,
              min_tokens: int) -> list[dict[str, Any]]:
    rows = []
    order = servers if index % 2 == 0 else servers[::-1]
    for level in levels:
        per_client = requests_per_client(level, max_tokens, min_tokens)
        for server in order:
            tag = f"r{index}c{level}"  # the same prompts for every server in this round
            row = measure(server, level, per_client, max_tokens, tag)
            row.update(server=server.name, round=index, loadavg=loadavg(),
                       alive=server.alive())
            rows.append(row)
            print(f"  round {index + 1} c={level:<3} {server.name:<13} {row['tok_per_s']:>9.1f} "
                  f"tok/s  ttft p50 {(row['ttft_p50'] or 0) * 1e3:7.1f} ms  itl p50 "
                  f"{(row['itl_p50'] or 0) * 1e3:6.2f} ms  tokens/req "
                  f"{row['tokens_per_request']:6.1f}  errors {row['errors']}", flush=True)
    return rows


def warm_up(servers: Sequence[Runner], levels: list[int]) -> None:
    """One short request per client at every level: compilation and first-use costs."""
    for server in servers:
        for level in levels:
            measure(server, level, 1, 8, f"warm{level}")


def bench_fixture(fixture: str, names: list[str], args: argparse.Namespace,
                  executables: dict[str, str | None], workdir: Path) -> dict[str, Any]:
    model = Path(fixture_path(fixture)).resolve()
    levels = [int(x) for x in args.levels.split(",")]
    max_tokens = args.max_tokens or FIXTURES[fixture]["max_tokens"]
    min_tokens = args.min_tokens or FIXTURES[fixture]["min_tokens"]
    blas = None if args.blas == "none" else args.blas
    if blas and not Path(blas).exists():
        print(f"[{fixture}] {blas} not found: MLX servers use the wheel's reference BLAS")
        blas = None
    environments = _environments(args)
    servers: list[Runner] = list(start_all(
        [n for n in names if n != LIMIT], model, max(levels), blas=blas,
        executables=executables, gguf_cache=args.gguf_cache, logdir=workdir / fixture,
        extra_args={k: v.split() for k, v in _pairs(args.args).items()},
        extra_env=environments))
    entry: dict[str, Any] = {
        "model": model.name, "parameters": parameter_count(model), "levels": levels,
        "max_tokens": max_tokens, "min_tokens": min_tokens, "blas_preload": blas,
        "servers": {s.name: {"command": public_command(s.spec.command), "version": s.version,
                             "request_fields": s.spec.fields}
                    for s in servers if isinstance(s, RunningServer)},
        "runs": [], "loadavg_before": loadavg(),
    }
    servers = with_limit(servers, names, model, blas, workdir / fixture,
                         environments.get(LIMIT, {}))
    for worker in servers:
        if isinstance(worker, LimitWorker):
            entry["servers"][LIMIT] = {
                "command": public_command([sys.executable, "-m", "benchmarks.mlx_limit",
                                           "--worker", str(worker.model)]),
                "version": _mlx_lm_version(), "request_fields": {"max_tokens": "exact"}}
    try:
        warm_up(servers, levels)
        for index in range(args.rounds):
            print(f"[{fixture}] round {index + 1}/{args.rounds}, load {loadavg()}", flush=True)
            entry["runs"] += one_round(servers, levels, index, max_tokens, min_tokens)
        entry["cpu_s_total"] = {s.name: round(s.cpu_s(), 1) for s in servers}
        for server in servers:
            if not server.alive():
                entry["servers"][server.name]["exited"] = server.log_tail()
    finally:
        for server in servers:
            server.stop()
    entry["loadavg_after"] = loadavg()
    entry["summary"] = report.summarize(entry)
    return entry


def with_limit(servers: Sequence[Runner], names: list[str], model: Path, blas: str | None,
               logdir: Path, extra_env: dict[str, str] | None = None) -> list[Runner]:
    """``servers``, and the in-process MLX limit when ``names`` asks for it, started in the MLX
    servers' environment (the same BLAS preload) on the mlx-lm directory of ``model`` (the
    servers already started are stopped if it fails)."""
    out: list[Runner] = list(servers)
    if LIMIT in names:
        env = dict(os.environ, **(extra_env or {}))
        try:
            out.append(start_worker(mlx_lm_dir(model), dict(env, LD_PRELOAD=blas) if blas
                                    else env, logdir))
        except BaseException:
            for server in servers:
                server.stop()
            raise
    return out


def _mlx_lm_version() -> str:
    import mlx_lm

    return f"mlx-lm {mlx_lm.__version__} in process"


def default_servers(executables: dict[str, str | None]) -> list[str]:
    """mlxcel; mlx_lm.server; the MLX limit (mlx-lm in process); and the others whose path is
    given: llama-server twice, with its
    default threads and with one (``-t 1``: on a 2-core machine shared with a client and other
    servers its second thread's spinning cost it several times its speed; the targets take the
    better of the two in each round)."""
    names = ["mlxcel", "mlx-lm", LIMIT]
    if executables.get("llama-server"):
        names += ["llama-server", "llama-server@t1"]
    if executables.get("vllm-mlx"):
        names.append("vllm-mlx")
    return names


def _pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)


def _environments(args: argparse.Namespace) -> dict[str, dict[str, str]]:
    """Per-server environment: ``--pythonpath SERVER=PATH`` and ``--env SERVER=NAME=VALUE``."""
    out: dict[str, dict[str, str]] = {}
    for server, path in _pairs(args.pythonpath).items():
        out.setdefault(server, {})["PYTHONPATH"] = path
    for item in args.env:
        server, _, assignment = item.partition("=")
        name, _, value = assignment.partition("=")
        out.setdefault(server, {})[name] = value
    return out


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument("--fixtures", default="tiny,bench,real")
    parser.add_argument("--servers", default=None,
                        help=f"comma list of {', '.join((*KNOWN, LIMIT))}, or a variant: "
                        f"{', '.join(VARIANTS)} (default: mlxcel, mlx-lm, and "
                        "llama-server / vllm-mlx when their path is given)")
    parser.add_argument("--llama-server", default=None, help="path of a llama-server binary")
    parser.add_argument("--vllm-mlx", default=None, help="path of vllm-mlx's script")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=0, help="0: per fixture")
    parser.add_argument("--min-tokens", type=int, default=0,
                        help="tokens each level generates at least (0: per fixture)")
    parser.add_argument("--blas", default=DEFAULT_BLAS,
                        help="LD_PRELOAD for the MLX servers ('none': the wheel's BLAS)")
    parser.add_argument("--args", action="append", default=[], metavar="SERVER=FLAGS",
                        help="extra flags for one server, e.g. 'llama-server=-t 2' "
                        "(a server may be named kind@label to run twice: mlxcel@base)")
    parser.add_argument("--pythonpath", action="append", default=[], metavar="SERVER=PATH",
                        help="PYTHONPATH of one server, e.g. another mlxcel checkout's server/")
    parser.add_argument("--env", action="append", default=[], metavar="SERVER=NAME=VALUE",
                        help="an environment variable of one server (an empty value removes "
                        "it), e.g. 'mlxcel@one=MLXCEL_STREAM_INTERVAL_MS=0'")
    parser.add_argument("--gguf-cache", type=Path,
                        default=Path.home() / ".cache" / "mlxcel" / "bench-models")
    parser.add_argument("--workdir", type=Path, default=None, help="server logs")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    executables = {"llama-server": args.llama_server, "vllm-mlx": args.vllm_mlx}
    names = args.servers.split(",") if args.servers else default_servers(executables)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="mlxcel-bench-peers-"))).resolve()
    results: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": report.machine(),
        "command": " ".join(["python -m benchmarks.peers",
                             *public_command(sys.argv[1:] if argv is None else argv)]),
        "python": platform.python_version(), "rounds": args.rounds, "fixtures": {},
    }
    for fixture in args.fixtures.split(","):
        results["fixtures"][fixture] = bench_fixture(fixture, names, args, executables,
                                                     workdir)
    results["targets"] = report.targets(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.json").write_text(json.dumps(results, indent=1) + "\n")
    (args.out / "peers.md").write_text(report.markdown(results))
    report.plot(results, args.out / "peers.png")
    print(report.target_table(results["targets"]))
    print(f"wrote {args.out / 'peers.json'}, peers.md, peers.png (server logs in {workdir})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
