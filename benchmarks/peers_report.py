"""What ``benchmarks.peers`` publishes: per-server medians over rounds, mlxcel's per-round
ratios to each peer, issue 21's targets, the Markdown page and the plot."""

from __future__ import annotations

import os
import platform
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

BASELINE = "mlxcel"
LIMIT = "mlx-limit"  # benchmarks.mlx_limit.NAME


def machine() -> str:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.machine()}, {os.cpu_count()} cores {model}, {platform.system()}".strip()


def spread(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3)}


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def _median(values: list[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(statistics.median(kept), 3) if kept else None


def _ratios(items: list[dict[str, Any]], by_round: dict[tuple[str, int, int], dict[str, Any]],
            subject: str) -> tuple[dict[str, float] | None, dict[str, float] | None]:
    """``subject``'s tok/s and TTFT p50 ÷ each of ``items``' (one server at one level), taken
    within each round, as spreads over rounds; none for the subject itself."""
    if not items or items[0]["server"] == subject:
        return None, None
    tok_ratio, ttft_ratio = [], []
    for run in items:
        base = by_round.get((subject, run["level"], run["round"]))
        if base and run["tok_per_s"]:
            tok_ratio.append(base["tok_per_s"] / run["tok_per_s"])
        if base and base["ttft_p50"] and run["ttft_p50"]:
            ttft_ratio.append(base["ttft_p50"] / run["ttft_p50"])
    return spread(tok_ratio), spread(ttft_ratio)


def summarize(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per server and level: medians and ranges over rounds, and the ratios of mlxcel
    to that server."""
    runs: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    by_round: dict[tuple[str, int, int], dict[str, Any]] = {}
    for run in entry["runs"]:
        runs[(run["server"], run["level"])].append(run)
        by_round[(run["server"], run["level"], run["round"])] = run
    rows = []
    for (server, level), items in runs.items():
        tok_ratio, ttft_ratio = _ratios(items, by_round, BASELINE)
        rows.append({
            "server": server, "level": level, "rounds": len(items),
            "tok_per_s": spread([r["tok_per_s"] for r in items]),
            "ttft_p50_ms": _median([_ms(r["ttft_p50"]) for r in items]),
            "ttft_p95_ms": _median([_ms(r["ttft_p95"]) for r in items]),
            "itl_p50_ms": _median([_ms(r["itl_p50"]) for r in items]),
            "itl_p95_ms": _median([_ms(r["itl_p95"]) for r in items]),
            "errors": sum(r["errors"] for r in items),
            "requests": sum(r["requests"] for r in items),
            "tokens_per_request": _median([r["tokens_per_request"] for r in items]),
            "counted_by": sorted({c for r in items for c in r["counted_by"]}),
            "cpu_ms_per_token": _median([r.get("server_cpu_ms_per_token") for r in items]),
            "mlxcel_tok_ratio": tok_ratio, "mlxcel_ttft_ratio": ttft_ratio,
        })
    return sorted(rows, key=lambda r: (r["level"], r["server"] != BASELINE, r["server"]))


def best_ratio(entry: dict[str, Any], kind: str, level: int, key: str,
               subject: str = BASELINE) -> dict[str, float] | None:
    """``subject``'s value ÷ the best of ``kind``'s variants (``llama-server``,
    ``llama-server@t1``, ...) in the same round, as a spread over rounds: the highest tok/s,
    or the lowest TTFT p50 (where smaller is better, ``key`` ``ttft_p50``)."""
    rounds: dict[int, dict[str, float]] = defaultdict(dict)
    for run in entry["runs"]:
        if run["level"] == level and run.get(key):
            rounds[run["round"]][run["server"]] = run[key]
    pick = min if key.startswith("ttft") else max
    ratios = []
    for values in rounds.values():
        theirs = [v for name, v in values.items() if name.split("@", 1)[0] == kind]
        if subject in values and theirs:
            ratios.append(values[subject] / pick(theirs))
    return spread(ratios)


def streams(level: int) -> str:
    return f"{level} stream" if level == 1 else f"{level} streams"


def _target(fixture: str, text: str, goal: str, value: dict[str, float] | None,
            met: bool | None) -> dict[str, Any]:
    return {"fixture": fixture, "target": text, "goal": goal,
            "value": value, "met": met if value is not None else None}


def _targets_for(results: dict[str, Any], subject: str) -> list[dict[str, Any]]:
    """Issue 38's targets measured for ``subject`` on every fixture run: served tok/s at least
    the MLX limit (mlx-lm in process) at every level; at least mlx_lm.server's at one stream and
    twice its aggregate at 8 and 32; no errors. llama-server is context, with no target."""
    out = []
    for fixture, entry in results["fixtures"].items():
        for level in entry["levels"]:
            ratio = best_ratio(entry, LIMIT, level, "tok_per_s", subject)
            out.append(_target(fixture, f"tok/s ÷ MLX limit (in process), {streams(level)}",
                               "≥ 1.0", ratio, ratio is not None and ratio["median"] >= 1.0))
        for level in entry["levels"]:
            goal = 1.0 if level == 1 else 2.0
            ratio = best_ratio(entry, "mlx-lm", level, "tok_per_s", subject)
            out.append(_target(fixture, f"tok/s ÷ mlx_lm.server, {streams(level)}",
                               f"≥ {goal:.1f}", ratio,
                               ratio is not None and ratio["median"] >= goal))
        rows = [r for r in entry["summary"] if r["server"] == subject]
        errors = sum(r["errors"] for r in rows)
        count = {"median": errors, "min": errors, "max": errors} if rows else None
        out.append(_target(fixture, "mlxcel errors, all levels", "0", count, errors == 0))
    return out


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 38's targets, each with mlxcel's measured median (and range) over rounds and
    whether it is met ("llama-server" is the best of its variants in each round)."""
    return _targets_for(results, BASELINE)


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def _range(value: dict[str, float] | None, digits: int = 2) -> str:
    if value is None:
        return "—"
    return (f"**{value['median']:.{digits}f}** ({value['min']:.{digits}f}–"
            f"{value['max']:.{digits}f})")


MET = {True: "yes", False: "**no**", None: "not run"}


def target_table(rows: list[dict[str, Any]]) -> str:
    """mlxcel's targets."""
    lines = ["| fixture | target | goal | mlxcel's median (range over rounds) | met |",
             "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['fixture']} | {row['target']} | {row['goal']} | "
                     f"{_range(row['value'], 3)} | {MET[row['met']]} |")
    return "\n".join(lines) + "\n"


def fixture_table(entry: dict[str, Any]) -> str:
    lines = ["| streams | server | tok/s, median (range) | mlxcel ÷ server |"
             " TTFT p50 / p95 | inter-token p50 / p95 | tokens per request | errors | "
             "server CPU ms per token |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in entry["summary"]:
        tok = row["tok_per_s"]
        lines.append(
            f"| {row['level']} | {row['server']} | {_num(tok['median'] if tok else None)} "
            f"({_num(tok['min'] if tok else None)}–{_num(tok['max'] if tok else None)}) | "
            f"{_range(row['mlxcel_tok_ratio'])} | {_num(row['ttft_p50_ms'])} / "
            f"{_num(row['ttft_p95_ms'])} ms | {_num(row['itl_p50_ms'], 2)} / "
            f"{_num(row['itl_p95_ms'], 2)} ms | {_num(row['tokens_per_request'])} | "
            f"{row['errors']}/{row['requests']} | {_num(row['cpu_ms_per_token'], 2)} |")
    return "\n".join(lines) + "\n"


def peer_wins(entry: dict[str, Any]) -> list[str]:
    """Every level where a peer's median tok/s or TTFT p50 beats mlxcel's."""
    wins = []
    for row in entry["summary"]:
        if row["server"] == BASELINE:
            continue
        tok, ttft = row["mlxcel_tok_ratio"], row["mlxcel_ttft_ratio"]
        if tok and tok["median"] < 1.0:
            wins.append(f"{row['server']} at {streams(row['level'])}: "
                        f"{1 / tok['median']:.2f}× mlxcel's tok/s")
        if ttft and ttft["median"] > 1.0:
            wins.append(f"{row['server']} at {streams(row['level'])}: TTFT p50 "
                        f"{ttft['median']:.2f}× shorter than mlxcel's")
    return wins


def markdown(results: dict[str, Any]) -> str:
    parts = [f"# Servers side by side ({results['started']})\n",
             f"Machine: {results['machine']}. Command: `{results['command']}`. "
             f"{results['rounds']} interleaved rounds; all servers running at once.\n",
             "## Targets (issue 38)\n",
             "The MLX limit (`mlx-limit`) is mlx-lm in process on the same weights and backend, "
             "no HTTP: `generate_step` at one stream, `BatchGenerator` at more "
             "(`benchmarks/mlx_limit.py`). llama-server is context: it does not run MLX.\n",
             target_table(results["targets"])]
    for name, entry in results["fixtures"].items():
        counted = {r["server"]: "/".join(r["counted_by"]) for r in entry["summary"]}
        parts += [f"## `{name}` fixture: {entry['model']}, {entry['parameters']:,} parameters\n",
                  f"{entry['max_tokens']} tokens per request (greedy), at least "
                  f"{entry['min_tokens']} tokens per level; MLX servers with "
                  f"`LD_PRELOAD={entry['blas_preload']}`; load average "
                  f"{entry['loadavg_before']} before, {entry['loadavg_after']} after.\n",
                  fixture_table(entry)]
        wins = peer_wins(entry)
        # A measurement, not a verdict: it holds for this machine and these fixtures only.
        parts.append("Where a peer is ahead of mlxcel: " + "; ".join(wins) + ".\n" if wins else
                     "No peer's median tok/s or TTFT p50 beat mlxcel's at the levels measured "
                     "here (this machine, these fixtures).\n")
        parts.append("| server | version | tokens counted by | request fields | command |\n"
                     "|---|---|---|---|---|")
        for server, info in entry["servers"].items():
            parts.append(f"| {server} | {info['version']} | {counted.get(server, '—')} | "
                         f"`{info['request_fields']}` | `{' '.join(info['command'])}` |")
        parts.append("")
    return "\n".join(parts) + "\n"


def plot(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fixtures = list(results["fixtures"].items())
    fig, axes = plt.subplots(len(fixtures), 2, figsize=(11, 4 * len(fixtures)), squeeze=False)
    for (name, entry), (tok_ax, ttft_ax) in zip(fixtures, axes, strict=True):
        servers = sorted({r["server"] for r in entry["summary"]},
                         key=lambda s: (s != BASELINE, s))
        for server in servers:
            rows = [r for r in entry["summary"] if r["server"] == server and r["tok_per_s"]]
            xs = [r["level"] for r in rows]
            mid = [r["tok_per_s"]["median"] for r in rows]
            err = [[m - r["tok_per_s"]["min"] for m, r in zip(mid, rows, strict=True)],
                   [r["tok_per_s"]["max"] - m for m, r in zip(mid, rows, strict=True)]]
            tok_ax.errorbar(xs, mid, yerr=err, fmt="o-", capsize=3, label=server)
            ttft_ax.plot(xs, [r["ttft_p50_ms"] or float("nan") for r in rows], "o-",
                         label=server)
        for ax, label in ((tok_ax, "aggregate tok/s (median, range)"),
                          (ttft_ax, "TTFT p50 (ms, median)")):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("concurrent streams")
            ax.set_ylabel(label)
            ax.set_title(f"{name}: {entry['model']}, {entry['max_tokens']} tokens/request")
            ax.grid(alpha=0.3)
            ax.legend()
    fig.suptitle(f"{results['machine']}, {results['started']}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def rerender(path: Path) -> dict[str, Any]:
    """Recompute the summaries and targets of a ``peers.json`` from its runs, and write its
    ``peers.md`` and ``peers.png`` beside it (after a change to this module, no rerun)."""
    import json

    results = json.loads(path.read_text())
    for entry in results["fixtures"].values():
        entry["summary"] = summarize(entry)
    results["targets"] = targets(results)
    path.write_text(json.dumps(results, indent=1) + "\n")
    path.with_suffix(".md").write_text(markdown(results))
    plot(results, path.with_suffix(".png"))
    return results


if __name__ == "__main__":
    import sys

    print(target_table(rerender(Path(sys.argv[1] if len(sys.argv) > 1
                                     else "docs/benchmarks/peers.json"))["targets"]))
