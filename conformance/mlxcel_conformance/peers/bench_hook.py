"""The hook where the engine's load generator (``benchmarks/``) runs against every peer.

The suite does not measure speed; the load generator does, and it is built elsewhere. This module
only starts every peer afresh (the conformance run may have left a peer broken on purpose) and
hands the list of started peers to ``run_benchmarks``, which runs one command per peer:

    python -m mlxcel_conformance.peers --bench-command \\
        "python -m benchmarks.load --base-url {url} --levels 1,4,8 --label {name} \\
         --out {out}/{name}.json"

``{url}``, ``{name}`` and ``{out}`` are filled per peer (``{out}`` is the run's output
directory). Without ``--bench-command`` nothing is measured and the run says so. All peers run at
once here; ``python -m benchmarks.peers`` (``nox -s bench_peers``) runs them one at a time with
matched slot counts and writes the combined JSON, plot and ratio table.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from ..errors import SetupError
from .launchers import Peer, PeerProcess

BENCH_TIMEOUT_S = 600.0


def run_benchmarks_on(started: list[PeerProcess], command: str, out: Path) -> dict[str, int]:
    """Run ``command`` once per started peer; return each peer's exit status."""
    results: dict[str, int] = {}
    for peer in started:
        argv = shlex.split(command.format(url=peer.base_url, name=peer.peer.name, out=out))
        print(f"benchmark {peer.peer.name}: {' '.join(argv)}", flush=True)
        try:
            results[peer.peer.name] = subprocess.run(argv, check=False,
                                                     timeout=BENCH_TIMEOUT_S).returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            print(f"benchmark {peer.peer.name} failed: {exc}", flush=True)
            results[peer.peer.name] = -1
    return results


def run_benchmarks(peers: list[Peer], workdir: Path, out: Path,
                   command: str | None) -> dict[str, int] | None:
    """Start every peer, run the load generator against each, stop them all."""
    if not command:
        print("benchmarks: not run (no --bench-command; the load generator lives in "
              "benchmarks/)", flush=True)
        return None
    started: list[PeerProcess] = []
    try:
        for peer in peers:
            try:
                started.append(PeerProcess(peer, workdir / "bench" / peer.name).start())
            except SetupError as exc:
                print(f"benchmark {peer.name}: not started: {exc}", flush=True)
        return run_benchmarks_on(started, command, out)
    finally:
        for process in started:
            process.stop()
