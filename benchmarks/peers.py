"""Peers side by side (``nox -s bench_peers``): the same streaming-chat concurrency sweep
(``benchmarks.load``) against every peer server, one at a time, on the same model, in one run.

    python -m benchmarks.peers --out docs/benchmarks [--llama-server PATH] [--vllm-mlx PATH]
        [--peers mlxcel,mlx-lm,llama-server] [--levels 1,4,8] [--max-tokens 32] [--model DIR]

Each peer is started by the conformance launchers (``mlxcel_conformance.peers.launchers``, so
llama-server gets the same GGUF conversion), with as many slots as the highest level and no API
key, warmed with one short request, swept, and stopped before the next starts (vllm-mlx's
requests also carry ``model``, which it requires; see ``request_fields``). Writes
``peers.json`` (every level of every peer, plus the machine and the settings), ``peers.png``
(aggregate tok/s and TTFT p50 against concurrency, one line per server) and ``peers.md`` (the
ratio table against the reference server). A peer that will not start, or whose requests fail,
is recorded with its error count and log tail; the run goes on.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from mlxcel_conformance.errors import SetupError
from mlxcel_conformance.peers.launchers import Peer, PeerProcess, make_peer

from .load import sweep

BASELINE = "mlxcel"


def slots_args(name: str, slots: int) -> list[str]:
    """Server flags that give ``slots`` concurrent sequences (the conformance run uses 4)."""
    if name == "mlxcel":
        return ["--parallel", str(slots), "--max-queue", str(16 * slots)]
    if name == "llama-server":
        # The context is divided among the slots: keep 1024 tokens per slot.
        return ["-np", str(slots), "-c", str(1024 * slots)]
    return []  # mlx_lm.server: --decode-concurrency 32 by default; vllm-mlx batches itself


def request_fields(name: str, model_dir: Path) -> dict[str, Any]:
    """Fields added to every benchmark request body for this peer.

    vllm-mlx answers a chat request without ``model`` with 422, so it gets the name it serves
    (``--served-model-name``, the model directory's name). The others get none: mlx_lm.server
    loads any ``model`` other than its default as a local path or Hugging Face Hub repository.
    """
    return {"model": model_dir.name} if name == "vllm-mlx" else {}


def bench_peer(peer: Peer, workdir: Path, levels: list[int], max_tokens: int,
               per_worker: int) -> dict[str, Any]:
    bench = dataclasses.replace(peer, api_key=None,
                                extra_args=slots_args(peer.name, max(levels)))
    started = PeerProcess(bench, workdir / peer.name)
    entry: dict[str, Any] = {"name": peer.name, "version": peer.version(), "levels": []}
    extra = request_fields(peer.name, peer.model_dir)
    if extra:
        entry["request_fields"] = extra
    try:
        started.start()
    except SetupError as exc:
        entry["error"] = f"did not start: {exc}"
        entry["log_tail"] = started.log_tail()
        print(f"[{peer.name}] {entry['error']}", flush=True)
        return entry
    try:
        print(f"[{peer.name}] {' '.join(started.command)}", flush=True)
        sweep(started.base_url, [1], 8, 1, extra)  # warm up: first-request compilation, caches
        entry["levels"] = sweep(started.base_url, levels, max_tokens, per_worker, extra)
        if not started.alive():
            entry["error"] = f"exited with code {started.exit_code()} during the sweep"
            entry["log_tail"] = started.log_tail()
    finally:
        started.stop()
    return entry


def ratio_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Per level and peer: tok/s and TTFT p50 as a multiple of the baseline's."""
    by_peer = {p["name"]: {lv["concurrency"]: lv for lv in p["levels"]} for p in results["peers"]}
    base = by_peer.get(BASELINE, {})
    rows = []
    for name, levels in by_peer.items():
        for level, row in sorted(levels.items()):
            ref = base.get(level)
            tok = row["tok_per_s"] / ref["tok_per_s"] if ref and ref["tok_per_s"] else None
            ttft = (row["ttft_p50"] / ref["ttft_p50"]
                    if ref and ref["ttft_p50"] and row["ttft_p50"] else None)
            rows.append({"peer": name, "concurrency": level, "tok_per_s": row["tok_per_s"],
                         "ttft_p50_ms": None if row["ttft_p50"] is None
                         else round(row["ttft_p50"] * 1000, 1),
                         "errors": row["errors"], "requests": row["requests"],
                         "tok_per_s_vs_mlxcel": None if tok is None else round(tok, 2),
                         "ttft_vs_mlxcel": None if ttft is None else round(ttft, 2)})
    return rows


def _cell(value: Any, suffix: str = "") -> str:
    return "—" if value is None else f"{value}{suffix}"


def ratio_markdown(results: dict[str, Any]) -> str:
    lines = ["| server | streams | tok/s | TTFT p50 | errors | tok/s vs mlxcel | TTFT vs mlxcel |",
             "|---|---|---|---|---|---|---|"]
    for row in ratio_rows(results):
        lines.append(
            f"| {row['peer']} | {row['concurrency']} | {row['tok_per_s']} | "
            f"{_cell(row['ttft_p50_ms'], ' ms')} | {row['errors']}/{row['requests']} | "
            f"{_cell(row['tok_per_s_vs_mlxcel'], '×')} | {_cell(row['ttft_vs_mlxcel'], '×')} |")
    for peer in results["peers"]:
        if peer.get("error"):
            lines.append(f"\n{peer['name']}: {peer['error']}")
    return "\n".join(lines) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (tok_ax, ttft_ax) = plt.subplots(1, 2, figsize=(11, 4.2))
    for peer in results["peers"]:
        rows = peer["levels"]
        if not rows:
            continue
        xs = [r["concurrency"] for r in rows]
        tok_ax.plot(xs, [r["tok_per_s"] for r in rows], "o-", label=peer["name"])
        ttft_ax.plot(xs, [(r["ttft_p50"] or float("nan")) * 1000 for r in rows], "o-",
                     label=peer["name"])
    for ax, label in ((tok_ax, "aggregate tok/s"), (ttft_ax, "TTFT p50 (ms)")):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("concurrent streams")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"{results['model']}: {results['max_tokens']} tokens per request, "
                 f"{results['machine']}")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.peers",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument("--peers", default=None,
                        help="comma list (default: mlxcel, mlx-lm, plus llama-server / "
                        "vllm-mlx when their path is given)")
    parser.add_argument("--llama-server", default=None, help="path of a llama-server binary")
    parser.add_argument("--vllm-mlx", default=None, help="path of the vllm-mlx script")
    parser.add_argument("--model", type=Path, default=None,
                        help="model directory (default: the bundled qwen3 fixture)")
    parser.add_argument("--levels", default="1,4,8")
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--per-worker", type=int, default=2)
    parser.add_argument("--workdir", type=Path, default=None)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from mlxcel.bundled import bundled_model_path

    executables = {"llama-server": args.llama_server, "vllm-mlx": args.vllm_mlx}
    names = args.peers.split(",") if args.peers else [BASELINE, "mlx-lm"] + [
        name for name, path in executables.items() if path]
    model = (args.model or bundled_model_path()).resolve()
    levels = [int(x) for x in args.levels.split(",")]
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="mlxcel-bench-peers-"))).resolve()
    results: dict[str, Any] = {
        "model": model.name, "levels": levels, "max_tokens": args.max_tokens,
        "per_worker": args.per_worker, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                               time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()}",
        "peers": [],
    }
    for name in names:
        peer = make_peer(name.strip(), model, executables.get(name.strip()))
        results["peers"].append(bench_peer(peer, workdir, levels, args.max_tokens,
                                           args.per_worker))
    results["ratios"] = ratio_rows(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "peers.json").write_text(json.dumps(results, indent=2) + "\n")
    (args.out / "peers.md").write_text(ratio_markdown(results))
    plot(results, args.out / "peers.png")
    print(ratio_markdown(results))
    print(f"wrote {args.out / 'peers.json'}, peers.md, peers.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
