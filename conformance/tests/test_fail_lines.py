"""A FAIL in the terminal is one line (feature, check, evidence, source); the run ends with the
suite's one summary line, not pytest's totals; the full evidence stays in the report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from replay_target import Replay, serving
from test_replay_target import BROKEN

from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.fail_lines import LINE_LIMIT, SHOWN, error_lines, fail_line, shown_line
from mlxcel_conformance.report import Record, Report, Verdict, plural


def test_fail_line_names_check_source_and_evidence() -> None:
    failure = ConformanceFailure("usage_chunk_last", "the usage chunk\nis not last",
                                 evidence={"chunks": ["x" * 5000], "source": "OpenAI ref"})
    record = Record.from_failure("chat", "chat.stream.usage", failure)
    record.message = failure.message
    line = fail_line(record)
    assert "\n" not in line and len(line) <= LINE_LIMIT
    assert line.startswith("FAIL chat chat.stream.usage [usage_chunk_last] the usage chunk is")
    assert "evidence: {\"chunks\": [\"xxx" in line and "source: OpenAI ref" in line


def test_fail_line_falls_back_to_the_checks_registered_source() -> None:
    record = Record("chat", "f", Verdict.FAIL, checks=["sse_framing"], message="bad framing")
    assert "source: WHATWG HTML Living Standard" in fail_line(record)


def test_one_distinct_defect_is_singular() -> None:
    assert plural(1, "distinct defect") == "1 distinct defect"
    assert plural(2, "distinct defect") == "2 distinct defects"
    report = Report(target="t", profile="mlxcel")
    report.add(Record.from_failure("chat", "a", ConformanceFailure("sse_framing", "bad")))
    assert "[1 distinct defect](#distinct-defects)" in report.to_markdown()


def test_a_real_fail_is_one_terminal_line(tmp_path: Path) -> None:
    profile, name, broken, feature = BROKEN["missing_required_key"]
    with serving(Replay({name: broken})) as url:
        done = subprocess.run(
            [sys.executable, "-m", "mlxcel_conformance", "--base-url", url, "--profile",
             profile, "-k", "test_field_parity", "--report", str(tmp_path),
             "--request-timeout", "20"], capture_output=True, text=True, timeout=300)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    fails = [line for line in out.splitlines() if "FAIL" in line and "PASS" not in line]
    assert len(fails) == 1 and fails[0].startswith(f"FAIL chat {feature} ["), out
    assert "source: " in fails[0]
    assert "Traceback" not in out and "def " not in out and " passed" not in out, out
    summary = [line for line in out.splitlines() if line.startswith("mlxcel-conformance: ")]
    assert len(summary) == 1 and "1 FAIL" in summary[0] and "one per defect" in summary[0]
    assert len(out.splitlines()) <= 8, out  # progress, the FAIL, the report path, the summary
    report = json.loads((tmp_path / "conformance.json").read_text())
    record = next(r for r in report["records"] if r["feature"] == feature)
    assert record["evidence"], record  # the full evidence is in the report


def test_errors_are_one_line_per_cause() -> None:
    records = [Record("chat", f"f{i}", Verdict.ERROR, message="reference server exited with "
                      "code 1:\nTraceback ...") for i in range(3)]
    records.append(Record("chat", "g", Verdict.ERROR, message="bad spec"))
    assert error_lines(records) == ["ERROR (3 features) reference server exited with code 1:",
                                    "ERROR (1 feature) bad spec"]


def test_lenient_and_inconclusive_rows_are_one_line_each() -> None:
    lenient = Record("chat", "chat.errors.invalid_body", Verdict.LENIENT,
                     checks=["error_status"], message="HTTP 200 for\na request it rejects")
    assert shown_line(lenient) == ("LENIENT chat chat.errors.invalid_body [error_status] "
                                   "HTTP 200 for a request it rejects")
    cut = Record("chat", "s", Verdict.INCONCLUSIVE, message="x" * 1000)
    line = shown_line(cut)
    assert line.startswith("INCONCLUSIVE chat s xxx") and len(line) <= LINE_LIMIT
    assert SHOWN == (Verdict.LENIENT, Verdict.INCONCLUSIVE)
