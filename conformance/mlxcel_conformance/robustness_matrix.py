"""The robustness matrix: one page comparing servers on the robustness family.

    python -m mlxcel_conformance.robustness_matrix --out docs/conformance \\
        mlxcel=reports/rob-mlxcel/conformance.json mlx-lm=reports/rob-mlx-lm/conformance.json

Reads each server's report (a run with ``--robustness -k robustness``) and writes
``robustness.md`` (a table of verdicts, then what each check measured) and ``robustness.json``
(the same records, by server). It is its own page, beside the main matrices.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .report import PRECEDENCE

FEATURES = (
    ("robustness.large_body", "large bodies (24 MiB chat and Messages, 64 MiB chat)"),
    ("robustness.sampler_field", "pathological sampler fields (DRY breakers, stop, logit_bias)"),
    ("robustness.template", "request-supplied chat templates"),
    ("robustness.bad_input", "bad input that once answered 500"),
    ("robustness.read_timeout", "36 stalled connections (slowloris headers and bodies)"),
    ("robustness.refused_batch", "four 16-prompt requests at once: no work left after"),
    ("robustness.stream_backpressure", "four streams whose client never reads"),
    ("robustness.trickled_bodies", "50 bodies trickled one byte a second"),
    ("robustness.whole_run", "/health and memory over the whole run"),
)


# the report's own merge order: the worst verdict of a check wins
_RANK = {verdict.value: rank for verdict, rank in PRECEDENCE.items()}
WHOLE_RUN = "robustness.whole_run"


def _records(paths: list[Path]) -> dict[str, dict[str, Any]]:
    """A server's robustness records; from several reports (each check run on a fresh server)
    the worst verdict of each check, and no whole-run record (no run was whole)."""
    merged: dict[str, dict[str, Any]] = {}
    for path in paths:
        data = json.loads(path.read_text(encoding="utf-8"))
        for record in data.get("records", []):
            if record["family"] != "robustness" or (len(paths) > 1 and
                                                     record["feature"] == WHOLE_RUN):
                continue
            earlier = merged.get(record["feature"])
            if earlier is None or _RANK[record["verdict"]] > _RANK[earlier["verdict"]]:
                merged[record["feature"]] = record
    return merged


def _health(evidence: dict[str, Any]) -> str:
    health, idle = evidence.get("health") or {}, evidence.get("idle") or {}
    if not health:
        return ""
    text = f"/health p99 {health.get('p99_ms')} ms, max {health.get('max_ms')} ms"
    if health.get("failed_probes"):
        text += f", {health['failed_probes']} unanswered"
    if idle:
        text += f" (idle p99 {idle.get('p99_ms')} ms)"
    return text


def _statuses(evidence: dict[str, Any]) -> str:
    outcomes = evidence.get("outcomes") or []
    parts = [f"{o.get('request')}: {o.get('status') or 'no answer'}" for o in outcomes
             if isinstance(o, dict)]
    return "; ".join(parts)


def _cell(record: dict[str, Any] | None) -> str:
    """The verdict; a FAIL of an extension check (mlxcel's own promise, checks/sources.py)
    is marked as such: it says what the server does, not that a public contract is broken."""
    if record is None:
        return "not run"
    evidence = record.get("evidence") or {}
    if record["verdict"] == "FAIL" and evidence.get("tier") == "extension":
        return "FAIL (extension)"
    return str(record["verdict"])


def render(servers: dict[str, dict[str, dict[str, Any]]], note: str = "") -> str:
    names = list(servers)
    lines = ["# Robustness matrix", "",
             "The suite's `robustness` family (`mlxcel-conformance --robustness -k robustness`) "
             "against each server on the same fixture model. Each check sends hostile requests "
             "while `GET /health` is probed on fresh connections; a check whose routes a server "
             "does not serve is UNSUPPORTED there. What is judged, and why it is fair to any "
             "server, is in `conformance/mlxcel_conformance/checks/robustness.py` and "
             "[Limits and hostile clients](../limits.md). A FAIL of a contract check breaks a "
             "public rule (every request gets an answer; bad input is a 4xx, not a 5xx, RFC "
             "9110); FAIL (extension) is a FAIL of one of mlxcel's own promises (`/health` "
             "within 100 ms of its floor while hostile requests run, stalled connections "
             "closed within 30 s, no work left after a refused request): what a client of a "
             "shared server relies on, but no peer documents it.", "",
             *([note, ""] if note else []),
             "| check | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    for feature, title in FEATURES:
        cells = [_cell(servers[name].get(feature)) for name in names]
        lines.append(f"| {title} (`{feature}`) | " + " | ".join(cells) + " |")
    for name in names:
        lines += ["", f"## {name}", ""]
        for feature, _ in FEATURES:
            record = servers[name].get(feature)
            if record is None:
                continue
            evidence = record.get("evidence") or {}
            detail = record.get("message") or _health(evidence)
            lines.append(f"- `{feature}` **{record['verdict']}**: {detail}".rstrip(": "))
            measured = "; ".join(x for x in (_health(evidence) if record.get("message") else "",
                                              _statuses(evidence)) if x)
            if measured:
                lines.append(f"  - measured: {measured}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--note", default="", help="how and where the runs were made")
    parser.add_argument("reports", nargs="+",
                        help="NAME=path/to/conformance.json[,another.json...]")
    args = parser.parse_args(argv)
    servers = {}
    for item in args.reports:
        name, _, paths = item.partition("=")
        servers[name] = _records([Path(p) for p in paths.split(",") if p])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "robustness.md").write_text(render(servers, args.note), encoding="utf-8")
    (args.out / "robustness.json").write_text(json.dumps(servers, indent=1) + "\n",
                                              encoding="utf-8")


if __name__ == "__main__":
    main()
