"""Run the suite against each peer in turn and publish the matrices (``nox -s peers``).

    python -m mlxcel_conformance.peers --out docs/conformance \\
        [--peers mlxcel,mlx-lm] [--llama-server PATH] [--vllm-mlx PATH] [--model DIR]

For each peer: start it on the fixture model, run ``mlxcel-conformance`` in a subprocess with the
peer's profile and ``--goldens shape``, bounded by a deadline and a per-request timeout, stop it,
then write ``<peer>.{json,md,html}``; at the end the comparison ``index.{md,html}``. A peer that
will not start, dies mid-run or overruns its deadline gets FAIL rows with its log as evidence, and
the run goes on with the next peer.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SetupError
from ..fixture_models import DEFAULT_FIXTURE, fixture_path
from ..plugin import PARTIAL_NAME
from ..report import JSON_NAME, Record, Report, Verdict
from . import pages
from .bench_hook import run_benchmarks
from .launchers import PEERS, Peer, PeerProcess, make_peer

DEADLINE_S = 540.0  # each peer's suite run; the issue bounds a peer at 10 minutes
REQUEST_TIMEOUT_S = 20.0


@dataclass
class SuiteOutcome:
    report: Report
    returncode: int | None  # None: killed at the deadline


def _failure(feature: str, check: str, message: str, **evidence: object) -> Record:
    return Record(family="health", feature=feature, verdict=Verdict.FAIL, checks=[check],
                  severity="critical", message=message, evidence=dict(evidence))


def run_suite(started: PeerProcess, report_dir: Path, deadline_s: float,
              request_timeout_s: float, extra: list[str]) -> SuiteOutcome:
    """The suite in its own process against the started peer; a deadline kill keeps the
    records written so far (the plugin rewrites a partial report after every test)."""
    peer = started.peer
    cmd = [sys.executable, "-m", "mlxcel_conformance", "--base-url", started.base_url,
           "--profile", peer.profile, "--goldens", "shape", "--report", str(report_dir),
           "--request-timeout", str(request_timeout_s), *extra]
    if peer.api_key:
        cmd += ["--api-key", peer.api_key]
    suite_log = started.workdir / "suite.log"
    returncode: int | None
    with suite_log.open("wb") as log:
        process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL)
        try:
            returncode = process.wait(timeout=deadline_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
            returncode = None
    print(_summary_tail(suite_log.read_text(errors="replace")))
    for name in (JSON_NAME, PARTIAL_NAME):
        if (report_dir / name).exists():
            report = Report.from_dict(json.loads((report_dir / name).read_text()))
            break
    else:
        report = Report(target=started.base_url, profile=peer.profile)
    if returncode is None:
        report.add(_failure("peer.run_deadline", "run_deadline",
                            f"the suite did not finish within {deadline_s:.0f} s; features "
                            "after the last record were not checked",
                            suite_log_tail=suite_log.read_text(errors="replace")[-2000:]))
    elif returncode not in (0, 1) and not report.records:
        report.add(Record(family="health", feature="peer.suite_run", verdict=Verdict.ERROR,
                          message=f"the suite exited with code {returncode}",
                          evidence={"suite_log_tail": suite_log.read_text()[-2000:]}))
    return SuiteOutcome(report, returncode)


def _summary_tail(text: str) -> str:
    """The suite's terminal summary: golden diffs onwards, else the last lines."""
    marker = text.find("golden diffs (expected vs got)")
    if marker >= 0:
        return text[text.rfind("\n", 0, marker) + 1:].rstrip()
    return "\n".join(text.rstrip().splitlines()[-5:])


def note_crash(report: Report, started: PeerProcess) -> None:
    """A peer that died during the run: one FAIL row with its log, and its exit code on every
    row that failed for want of a connection."""
    if started.alive():
        return
    code, tail = started.exit_code(), started.log_tail()
    for record in report.records:
        if record.verdict is Verdict.FAIL and "transport_error" in record.evidence:
            record.evidence = {**record.evidence, "peer_exit_code": code}
    report.add(_failure("peer.process_alive", "peer_process_alive",
                        f"{started.peer.name} exited with code {code} during the run",
                        exit_code=code, log_tail=tail))


def display_command(started: PeerProcess, workdir: Path) -> str:
    """The peer's command as published: no machine-specific paths, no port."""
    words = []
    for word in started.command:
        word = word.replace(str(workdir), "<workdir>").replace(str(started.peer.model_dir),
                                                               f"<{started.peer.model_dir.name}>")
        # other fixtures (the encoders) as paths relative to the fixtures folder
        fixtures = started.peer.model_dir.parent
        if word.startswith(str(fixtures) + "/"):
            word = f"<{word[len(str(fixtures)) + 1:]}>"
        if started.peer.executable and word == str(started.peer.executable):
            word = Path(word).name  # the user's own build: its name, not this machine's path
        words.append("python" if word == sys.executable else
                     "PORT" if word == str(started.port) else word)
    return " ".join(words)


def without_workdir(doc: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """``doc`` with this run's work directory written ``<workdir>``: a peer that echoes its
    model path (llama-server's ``model``) names no machine path in the published pages."""
    scrubbed: dict[str, Any] = json.loads(json.dumps(doc).replace(str(workdir), "<workdir>"))
    return scrubbed


def check_peer(peer: Peer, out: Path, workdir: Path, deadline_s: float,
               request_timeout_s: float, extra: list[str]) -> dict[str, Any]:
    started = PeerProcess(peer, workdir / peer.name)
    report_dir = workdir / peer.name / "report"
    try:
        started.start()
    except SetupError as exc:
        report = Report(target="(not started)", profile=peer.profile)
        report.add(_failure("peer.start", "peer_start", f"{peer.name} did not start: {exc}",
                            log_tail=started.log_tail()))
    else:
        try:
            report = run_suite(started, report_dir, deadline_s, request_timeout_s, extra).report
            note_crash(report, started)
        finally:
            started.stop()
    report.finish()
    doc = pages.peer_document(report, {
        "name": peer.name, "description": peer.description, "version": peer.version(),
        "profile": peer.profile, "goldens": "shape", "model": peer.model_dir.name,
        "command": display_command(started, workdir),
    })
    pages.write_peer(out, without_workdir(doc, workdir))
    print(f"{peer.name}: {report.summary_line()}", flush=True)
    return doc


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m mlxcel_conformance.peers",
                                     description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/conformance"))
    parser.add_argument("--peers", default=None,
                        help=f"comma list from {', '.join(PEERS)} (default: mlxcel, mlx-lm, "
                        "plus llama-server / vllm-mlx when their path is given)")
    parser.add_argument("--model", type=Path, default=None,
                        help="model directory (default: the qwen3 fixture in --fixture-dir)")
    parser.add_argument("--fixture-dir", type=Path, default=None,
                        help="directory of the fixture models (default: $MLXCEL_FIXTURES, "
                        "else the checkout's fixtures/models)")
    parser.add_argument("--llama-server", default=None, help="path of a llama-server binary")
    parser.add_argument("--vllm-mlx", default=None,
                        help="path of the vllm-mlx script in its own venv (not run by default)")
    parser.add_argument("--deadline", type=float, default=DEADLINE_S,
                        help="seconds each peer's suite run may take")
    parser.add_argument("--request-timeout", type=float, default=REQUEST_TIMEOUT_S)
    parser.add_argument("--bench-command", default=None,
                        help="load generator command per peer, with {url} {name} {out} "
                        "(see peers/bench_hook.py)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("pytest_args", nargs="*", help="passed to the suite (after --)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = args.peers.split(",") if args.peers else ["mlxcel", "mlx-lm"] + [
        name for name, path in (("llama-server", args.llama_server), ("vllm-mlx", args.vllm_mlx))
        if path]
    executables = {"llama-server": args.llama_server, "vllm-mlx": args.vllm_mlx}
    model = (args.model or fixture_path(DEFAULT_FIXTURE, args.fixture_dir)).resolve()
    peers = [make_peer(n.strip(), model, executables.get(n.strip())) for n in names]
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mlxcel-peers-"))
    for peer in peers:
        check_peer(peer, args.out, workdir.resolve(), args.deadline, args.request_timeout,
                   list(args.pytest_args))
    for path in pages.write_index(args.out):
        print(f"wrote {path}")
    run_benchmarks(peers, workdir, args.out, args.bench_command)
    return 0
