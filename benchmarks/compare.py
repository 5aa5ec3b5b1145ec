"""Interleaved ratios on a shared, noisy machine: every server under test runs at once, and
each round measures in-process mlx-lm ``stream_generate``, then each server at each level, in
an order that alternates between rounds. Ratios are taken within a round and reported as
medians, so load from other processes moves both sides of a ratio alike.

Besides tok/s it reports CPU time per generated token (the server process's user + system
time, from ``/proc``; the in-process baseline's own): wall-clock rates on a loaded machine
move by tens of percent between runs, CPU time per token much less, and it is what the
server's own overhead costs.

    python -m benchmarks.compare --fixture tiny --rounds 5 --levels 1,8,32
    # before/after: another mlxcel build, imported from another checkout's server/ directory
    python -m benchmarks.compare --fixture tiny --mlxcel before=/work/main/server
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass

from .cpu_time import tree_cpu_s
from .fixture import fixture_path
from .load import chat_body, sweep
from .run import RESULTS, free_port, server


@dataclass
class Target:
    name: str
    base: str
    proc: subprocess.Popen[bytes]

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server process and its descendants so far (Linux
        ``/proc``)."""
        try:
            return tree_cpu_s(self.proc.pid)
        except OSError:
            return float("nan")


def mlxcel_cmd(path: str, port: int, parallel: int) -> list[str]:
    return [sys.executable, "-m", "mlxcel", "--model", path, "--port", str(port),
            "--parallel", str(parallel), "--max-queue", "256", "--log-level", "warning"]


def start(stack: ExitStack, name: str, cmd: list[str], port: int, ready: str,
          pythonpath: str | None) -> Target:
    saved = os.environ.get("PYTHONPATH")
    if pythonpath is not None:
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (pythonpath, saved) if p)
    try:
        procs: list[subprocess.Popen[bytes]] = []
        base = stack.enter_context(server(cmd, port, ready, procs))
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved
    return Target(name, base, procs[0])


class InProcess:
    """mlx-lm ``stream_generate`` in this process: decode rate and CPU seconds per token."""

    def __init__(self, model_path: str, max_tokens: int) -> None:
        from mlx_lm import load

        self.model, self.tokenizer = load(model_path)[:2]
        self.prompt = self.tokenizer.apply_chat_template(
            [{"role": "user", "content": chat_body(1)["messages"][0]["content"]}],
            add_generation_prompt=True)
        self.max_tokens = max_tokens

    def run(self) -> tuple[float, float]:
        from mlx_lm import stream_generate
        from mlx_lm.sample_utils import make_sampler

        cpu0, rate, count = time.process_time(), 0.0, 0
        for response in stream_generate(self.model, self.tokenizer, self.prompt,
                                        max_tokens=self.max_tokens, sampler=make_sampler(0.0)):
            rate, count = response.generation_tps, response.generation_tokens
        return rate, (time.process_time() - cpu0) / max(count, 1)


def one_round(targets: list[Target], baseline: InProcess, levels: list[int],
              args: argparse.Namespace, reverse: bool) -> dict[str, float]:
    rate, cpu = baseline.run()
    row = {"in_process@1": rate, "in_process@1:cpu_ms": cpu * 1000}
    for level in levels:
        for target in targets[::-1] if reverse else targets:
            cpu0 = target.cpu_s()
            (result,) = sweep(target.base, [level], args.max_tokens, args.per_worker)
            used = target.cpu_s() - cpu0
            key = "stream_decode_tok_s" if level == 1 else "tok_per_s"
            row[f"{target.name}@{level}"] = result[key] or 0.0
            row[f"{target.name}@{level}:cpu_ms"] = 1000 * used / max(result["tokens"], 1)
            row[f"{target.name}@{level}:errors"] = result["errors"]
    return row


def ratios(row: dict[str, float], builds: list[str], levels: list[int]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in builds:
        if f"{name}@1" in row:
            out[f"{name} c1 / stream_generate"] = row[f"{name}@1"] / row["in_process@1"]
        for level in levels:
            for other in [*builds[:1], "mlx_lm.server"]:
                theirs = row.get(f"{other}@{level}")
                if other != name and theirs:
                    out[f"{name} c{level} / {other}"] = row[f"{name}@{level}"] / theirs
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fixture", default="tiny", help="tiny or bench")
    parser.add_argument("--levels", default="1,8,32")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--per-worker", type=int, default=1)
    parser.add_argument("--mlxcel", action="append", default=[], metavar="NAME=PYTHONPATH",
                        help="another mlxcel build to run side by side (e.g. a server/ dir)")
    parser.add_argument("--skip-peer", action="store_true", help="do not run mlx_lm.server")
    args = parser.parse_args()
    model = fixture_path(args.fixture)
    levels = [int(x) for x in args.levels.split(",")]
    builds: dict[str, str | None] = {"mlxcel": None}
    for spec in args.mlxcel:
        name, _, path = spec.partition("=")
        builds[name] = path
    RESULTS.mkdir(exist_ok=True)
    rows = []
    with ExitStack() as stack:
        targets = []
        for name, pythonpath in builds.items():
            port = free_port()
            targets.append(start(stack, name, mlxcel_cmd(model, port, max(levels)), port,
                                 "/health", pythonpath))
        if not args.skip_peer:
            port = free_port()
            cmd = [sys.executable, "-m", "mlx_lm.server", "--model", model, "--port", str(port)]
            targets.append(start(stack, "mlx_lm.server", cmd, port, "/v1/models", None))
        baseline = InProcess(model, args.max_tokens)
        baseline.run()  # warm up
        for target in targets:
            sweep(target.base, [1], 8, 1)
        for index in range(args.rounds):
            print(f"round {index + 1}/{args.rounds}", flush=True)
            rows.append(one_round(targets, baseline, levels, args, reverse=index % 2 == 1))
    per_round = [ratios(row, list(builds), levels) for row in rows]
    report = {
        "fixture": args.fixture,
        "args": vars(args),
        "median_ratios": {k: round(statistics.median(r[k] for r in per_round), 3)
                          for k in per_round[0]},
        "median_values": {k: round(statistics.median(r[k] for r in rows), 3) for k in rows[0]},
        "rounds": rows,
    }
    (RESULTS / f"compare-{args.fixture}.json").write_text(json.dumps(report, indent=2))
    print(json.dumps({k: report[k] for k in ("median_ratios", "median_values")}, indent=2))


if __name__ == "__main__":
    main()
