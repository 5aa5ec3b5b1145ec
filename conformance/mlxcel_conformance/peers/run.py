"""Run the suite against each peer in turn and publish the matrices (``nox -s peers``).

    python -m mlxcel_conformance.peers --out docs/conformance \\
        [--peers mlxcel,mlx-lm] [--llama-server PATH] [--vllm-mlx PATH] [--model DIR]
    python -m mlxcel_conformance.peers --out docs/conformance --real-model [--gguf FILE] ...

For each peer: start it on the fixture model, run ``mlxcel-conformance`` in a subprocess with the
peer's profile and ``--goldens shape``, bounded by a deadline and a per-request timeout, stop it,
then write ``<peer>.{json,md,html}``; at the end the comparison ``index.{md,html}``. A peer that
will not start, dies mid-run or overruns its deadline gets FAIL rows with its log as evidence, and
the run goes on with the next peer.

With ``--real-model`` the peers serve a real model instead, judged as the real-model lane judges
the reference (``peers/real_model.py``), and the pages go to ``OUT/real/``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import SetupError
from ..fixture_models import DEFAULT_FIXTURE, fixture_path
from ..plugin import PARTIAL_NAME
from ..report import JSON_NAME, Record, Report, Verdict
from . import pages, platform_log, real_model
from .bench_hook import run_benchmarks
from .launchers import PEERS, Peer, PeerProcess, make_peer

DEADLINE_S = 540.0  # each peer's suite run; the issue bounds a peer at 10 minutes
REQUEST_TIMEOUT_S = 20.0
# With family groups, the share of the deadline the groups get before the destructive tests run.
FIRST_PHASE_SHARE = 0.8


@dataclass
class SuiteOutcome:
    report: Report
    returncode: int | None  # None: killed at the deadline


def _failure(feature: str, check: str, message: str, **evidence: object) -> Record:
    return Record(family="health", feature=feature, verdict=Verdict.FAIL, checks=[check],
                  severity="critical", message=message, evidence=dict(evidence))


def _suite_command(started: PeerProcess, report_dir: Path, request_timeout_s: float | None,
                   families: str | None, extra: list[str]) -> list[str]:
    peer = started.peer
    cmd = [sys.executable, "-m", "mlxcel_conformance", "--base-url", started.base_url,
           "--profile", peer.profile, "--goldens", "shape", "--report", str(report_dir)]
    if request_timeout_s is not None:  # None: the suite's waits follow the pace it measures
        cmd += ["--request-timeout", str(request_timeout_s)]
    if families:
        cmd += ["--families", families]
    if peer.api_key:
        cmd += ["--api-key", peer.api_key]
    return cmd + extra


def _read_report(report_dir: Path) -> Report | None:
    for name in (JSON_NAME, PARTIAL_NAME):
        if (report_dir / name).exists():
            return Report.from_dict(json.loads((report_dir / name).read_text()))
    return None


@dataclass
class _SuiteRun:
    """One suite process: its families (None: the profile's), report folder and log."""

    families: str | None
    report_dir: Path
    log: Path
    extra: list[str]
    process: subprocess.Popen[bytes] | None = None
    returncode: int | None = None  # None: killed at the deadline
    limit_s: float = 0.0  # seconds from the start of the suite runs it was given

    def start(self, started: PeerProcess, request_timeout_s: float | None) -> None:
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                _suite_command(started, self.report_dir, request_timeout_s, self.families,
                               self.extra),
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait(self, ends: float) -> None:
        assert self.process is not None
        try:
            self.returncode = self.process.wait(timeout=max(0.0, ends - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)


def _phases(started: PeerProcess, report_dir: Path, extra: list[str],
            groups: Sequence[str]) -> list[list[_SuiteRun]]:
    """One run of the whole profile; or with ``groups``, the groups at once without the
    destructive tests, then those alone (``--destructive only``): a crash one of them causes
    then fails no other group's features (the suite runs them last for that reason)."""
    if not groups:
        return [[_SuiteRun(None, report_dir, started.workdir / "suite.log", extra)]]
    first = [_SuiteRun(group, report_dir / group.split(",")[0],
                       started.workdir / f"suite-{group.split(',')[0]}.log",
                       [*extra, "--destructive", "skip"]) for group in groups]
    last = _SuiteRun(",".join(groups), report_dir / "destructive",
                     started.workdir / "suite-destructive.log", [*extra, "--destructive", "only"])
    return [first, [last]]


def run_suite(started: PeerProcess, report_dir: Path, deadline_s: float,
              request_timeout_s: float | None, extra: list[str],
              groups: Sequence[str] = ()) -> SuiteOutcome:
    """The suite in its own process against the started peer, or with ``groups`` one process
    per group of families (``--families GROUP``) at once and then the destructive tests alone
    (``_phases``), their records merged and the families outside every group left out. A
    deadline kill keeps the records written so far (the plugin rewrites a partial report after
    every test)."""
    report = Report(target=started.base_url, profile=started.peer.profile)
    begun = time.monotonic()
    phases = _phases(started, report_dir, extra, groups)
    runs: list[_SuiteRun] = []
    for number, phase in enumerate(phases, start=1):
        # the destructive phase keeps its share of the deadline whatever the first one took
        share = 1.0 if number == len(phases) else FIRST_PHASE_SHARE
        for run in phase:
            run.start(started, request_timeout_s)
            run.limit_s = share * deadline_s
        for run in phase:
            run.wait(begun + run.limit_s)
        runs += phase
    asked = {name for group in groups for name in group.split(",")}
    for run in runs:
        text = run.log.read_text(errors="replace")
        print((f"[{run.log.stem}] " if groups else "") + _summary_tail(text))
        found = _read_report(run.report_dir)
        for record in found.records if found else []:
            if not asked or record.family in asked:
                report.add(record)
        where = f" ({run.log.stem.removeprefix('suite-')})" if groups else ""
        if run.returncode is None and groups:
            # A real model on a shared CPU: the deadline measures this machine, not the peer
            # (docs/conformance/verdicts.md: ERROR is the suite's setup).
            report.add(Record(family="health", feature="peer.run_deadline",
                              verdict=Verdict.ERROR, checks=["run_deadline"],
                              message=f"the suite{where} did not finish within "
                              f"{run.limit_s:.0f} s on this machine; features after the last "
                              "record were not checked",
                              evidence={"suite_log_tail": text[-2000:]}))
        elif run.returncode is None:
            report.add(_failure("peer.run_deadline", "run_deadline",
                                f"the suite{where} did not finish within {run.limit_s:.0f} s; "
                                "features after the last record were not checked",
                                suite_log_tail=text[-2000:]))
        elif run.returncode not in (0, 1) and not (found and found.records):
            report.add(Record(family="health", feature="peer.suite_run", verdict=Verdict.ERROR,
                              message=f"the suite{where} exited with code {run.returncode}",
                              evidence={"suite_log_tail": text[-2000:]}))
    codes = [run.returncode for run in runs]
    returncode = None if None in codes else max(code for code in codes if code is not None)
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


def without_workdir(doc: dict[str, Any], workdir: Path,
                    model: Path | None = None) -> dict[str, Any]:
    """``doc`` with this run's work directory written ``<workdir>`` and the model's path
    ``<its name>``: a peer that echoes its model path (llama-server's ``model``, a GGUF in the
    user's cache) names no machine path in the published pages."""
    text = json.dumps(doc).replace(str(workdir), "<workdir>")
    if model is not None:
        text = text.replace(json.dumps(str(model))[1:-1], f"<{model.name}>")
    scrubbed: dict[str, Any] = json.loads(text)
    return scrubbed


def check_peer(peer: Peer, out: Path, workdir: Path, deadline_s: float,
               request_timeout_s: float | None, extra: list[str],
               groups: Sequence[str] = ()) -> dict[str, Any]:
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
            report = run_suite(started, report_dir, deadline_s, request_timeout_s, extra,
                               groups).report
            note_crash(report, started)
            platform_log.reclassify(report, started.log_text(), peer.generation_failure)
        finally:
            started.stop()
    report.finish()
    doc = pages.peer_document(report, {
        "name": peer.name, "description": peer.description, "version": peer.version(),
        "profile": peer.profile, "goldens": "shape", "model": peer.model_dir.name,
        "command": display_command(started, workdir),
        "families": ", ".join(groups) if groups else "every family of the profile",
        "request_timeout": (f"{request_timeout_s:g} s" if request_timeout_s is not None
                            else "from the pace the suite measured"),
    })
    pages.write_peer(out, without_workdir(doc, workdir, peer.model_dir))
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
    parser.add_argument("--real-model", action="store_true",
                        help="the real model instead of the fixture, judged as the real-model "
                        "lane judges it (see peers/real_model.py): SmolLM2-135M-Instruct Q4_1 "
                        "(fixtures/real_model.py fetches it); pages in OUT/real/")
    parser.add_argument("--gguf", type=Path, default=None,
                        help="with --real-model: this GGUF file instead of SmolLM2")
    parser.add_argument("--fixture-dir", type=Path, default=None,
                        help="directory of the fixture models (default: $MLXCEL_FIXTURES, "
                        "else the checkout's fixtures/models)")
    parser.add_argument("--llama-server", default=None, help="path of a llama-server binary")
    parser.add_argument("--vllm-mlx", default=None,
                        help="path of the vllm-mlx script in its own venv (not run by default)")
    parser.add_argument("--deadline", type=float, default=None,
                        help=f"seconds each peer's suite run may take (default: {DEADLINE_S:g}, "
                        f"{real_model.DEADLINE_S:g} with --real-model)")
    parser.add_argument("--request-timeout", type=float, default=None,
                        help=f"seconds a suite request may take (default: {REQUEST_TIMEOUT_S:g};"
                        " with --real-model, from the pace the suite measures)")
    parser.add_argument("--bench-command", default=None,
                        help="load generator command per peer, with {url} {name} {out} "
                        "(see peers/bench_hook.py)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("pytest_args", nargs="*", help="passed to the suite (after --)")
    args = parser.parse_args(argv)
    if args.gguf and not args.real_model:
        parser.error("--gguf goes with --real-model")
    if args.real_model and args.model:
        parser.error("--model is the fixture run's; give --gguf FILE with --real-model")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    names = [n.strip() for n in args.peers.split(",")] if args.peers else ["mlxcel", "mlx-lm"] + [
        name for name, path in (("llama-server", args.llama_server), ("vllm-mlx", args.vllm_mlx))
        if path]
    executables = {"llama-server": args.llama_server, "vllm-mlx": args.vllm_mlx}
    out: Path = args.out
    groups: tuple[str, ...] = ()
    if args.real_model:
        gguf = (args.gguf or real_model.fetch_real_model()).resolve()
        peers = [real_model.real_peer(n, gguf, executables.get(n)) for n in names]
        out, groups = out / pages.REAL_DIR, real_model.GROUPS
        deadline = args.deadline or real_model.DEADLINE_S
        request_timeout = args.request_timeout
    else:
        model = (args.model or fixture_path(DEFAULT_FIXTURE, args.fixture_dir)).resolve()
        peers = [make_peer(n, model, executables.get(n)) for n in names]
        deadline = args.deadline or DEADLINE_S
        request_timeout = args.request_timeout or REQUEST_TIMEOUT_S
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="mlxcel-peers-"))
    for peer in peers:
        check_peer(peer, out, workdir.resolve(), deadline, request_timeout,
                   list(args.pytest_args), groups)
    for path in pages.write_index(out, real=args.real_model):
        print(f"wrote {path}")
    if args.real_model and pages.load_peers(args.out):
        # the fixture's comparison links to the real model's once there is one
        pages.write_index(args.out)
    run_benchmarks(peers, workdir, out, args.bench_command)
    return 0
