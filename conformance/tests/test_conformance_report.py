"""Tests for mlxcel_conformance.report: merging, the summary line, JSON and Markdown output."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from mlxcel_conformance.errors import ConformanceFailure, Severity
from mlxcel_conformance.report import Record, Report, Verdict, merge_records

START = datetime(2026, 11, 29, 12, 0, 0, tzinfo=timezone.utc)


def record(verdict: Verdict, **kwargs: object) -> Record:
    fields: dict[str, object] = {"family": "chat", "feature": "streaming", "verdict": verdict}
    fields.update(kwargs)
    return Record(**fields)  # type: ignore[arg-type]


def report() -> Report:
    return Report(target="http://127.0.0.1:8080", profile="mlx-lm", started=START)


@pytest.mark.parametrize(
    ("first", "second", "merged"),
    [
        (Verdict.PASS, Verdict.FAIL, Verdict.FAIL),
        (Verdict.FAIL, Verdict.PASS, Verdict.FAIL),
        (Verdict.UNSUPPORTED, Verdict.PASS, Verdict.PASS),
        (Verdict.PASS, Verdict.UNSUPPORTED, Verdict.PASS),
        (Verdict.UNSUPPORTED, Verdict.UNSUPPORTED, Verdict.UNSUPPORTED),
        (Verdict.PASS, Verdict.ERROR, Verdict.ERROR),
        (Verdict.ERROR, Verdict.FAIL, Verdict.FAIL),
        # a feature is PASS only when nothing of it found a leniency or failed to decide
        (Verdict.PASS, Verdict.LENIENT, Verdict.LENIENT),
        (Verdict.INCONCLUSIVE, Verdict.PASS, Verdict.INCONCLUSIVE),
        (Verdict.LENIENT, Verdict.INCONCLUSIVE, Verdict.LENIENT),
        (Verdict.UNSUPPORTED, Verdict.INCONCLUSIVE, Verdict.INCONCLUSIVE),
        (Verdict.LENIENT, Verdict.ERROR, Verdict.ERROR),
        (Verdict.LENIENT, Verdict.FAIL, Verdict.FAIL),
    ],
)
def test_merge_precedence(first: Verdict, second: Verdict, merged: Verdict) -> None:
    assert merge_records(record(first), record(second)).verdict is merged


def test_merge_keeps_checks_messages_and_worst_severity() -> None:
    merged = merge_records(
        record(Verdict.FAIL, checks=["a"], severity="medium", message="m1", evidence={"x": 1}),
        record(Verdict.FAIL, checks=["b", "a"], severity="critical", message="m2", duration_s=2),
    )
    assert merged.checks == ["a", "b"]
    assert merged.severity == "critical"
    assert merged.message == "m1; m2"
    assert merged.evidence == {"x": 1}
    assert merged.duration_s == 2


def test_pass_message_is_dropped_when_failed() -> None:
    merged = merge_records(
        record(Verdict.PASS, message="fine"), record(Verdict.FAIL, message="bad")
    )
    assert merged.message == "bad"


def test_record_from_failure() -> None:
    failure = ConformanceFailure("usage_chunk_last", "late", Severity.HIGH, {"index": 2})
    rec = Record.from_failure("chat", "usage", failure, checks=["sse_framing"], duration_s=0.5)
    assert rec.verdict is Verdict.FAIL and rec.checks == ["sse_framing", "usage_chunk_last"]
    assert rec.severity == "high" and rec.evidence == {"index": 2}


def test_summary_line_format() -> None:
    rep = report()
    rep.add(record(Verdict.PASS, feature="a"))
    rep.add(record(Verdict.PASS, feature="a"))  # merged: still one feature
    rep.add(record(Verdict.FAIL, feature="b"))
    rep.add(record(Verdict.UNSUPPORTED, family="responses", feature="c"))
    rep.finish(START + timedelta(seconds=41.23))
    assert rep.summary_line() == (
        "mlxcel-conformance: 1 PASS, 1 FAIL, 1 UNSUPPORTED, 0 ERROR, 0 LENIENT, 0 INCONCLUSIVE "
        "[FAIL: 1 contract, 0 extension, one per defect, seen in 1 feature] "
        "(profile mlx-lm, target http://127.0.0.1:8080, 41.2 s)"
    )
    assert "\n" not in rep.summary_line()


def test_records_grouped_in_family_order() -> None:
    rep = report()
    rep.add(record(Verdict.PASS, family="anthropic", feature="x"))
    rep.add(record(Verdict.PASS, family="vendor-extra", feature="y"))
    rep.add(record(Verdict.PASS, family="chat", feature="z"))
    assert [r.family for r in rep.records] == ["chat", "anthropic", "vendor-extra"]


def test_write_json_and_markdown(tmp_path: Path) -> None:
    rep = report()
    rep.add(record(Verdict.PASS, feature="text", checks=["sse_framing"]))
    failure = ConformanceFailure("done_terminator", "no [DONE] | pipe\nnewline", Severity.CRITICAL)
    rep.add(Record.from_failure("chat", "done", failure))
    rep.add(
        record(Verdict.UNSUPPORTED, family="responses", feature="stream", message="not claimed")
    )
    rep.finish(START + timedelta(seconds=3))
    json_path, md_path = rep.write(tmp_path / "out")
    assert json_path.name == "conformance.json" and md_path.name == "conformance.md"

    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["summary"]["counts"] == {"PASS": 1, "FAIL": 1, "UNSUPPORTED": 1, "ERROR": 0,
                                         "LENIENT": 0, "INCONCLUSIVE": 0}
    assert data["summary"]["line"] == rep.summary_line()
    assert data["families"]["chat"] == {"PASS": 1, "FAIL": 1, "UNSUPPORTED": 0, "ERROR": 0,
                                        "LENIENT": 0, "INCONCLUSIVE": 0}
    assert data["records"][1]["severity"] == "critical"
    assert Report.from_dict(data).to_dict() == data

    markdown = md_path.read_text(encoding="utf-8")
    assert markdown.index("| chat | 1 | 1 | 0 | 0 | 0 | 0 |") < markdown.index("### contract: chat")
    assert markdown.index("### contract: chat") < markdown.index("### contract: responses")
    assert "| done | FAIL (critical) | `done_terminator` |" in markdown
    assert "pipe<br>newline" in markdown and "\\| pipe" in markdown
    feature_rows = markdown[markdown.index("### contract: chat") :].splitlines()
    for row in (line for line in feature_rows if line.startswith("|")):
        assert len(re.findall(r"(?<!\\)\|", row)) == 6, row  # five cells: escaping held


def test_unfinished_report_uses_elapsed_time() -> None:
    rep = Report(target="t", profile="mlxcel")
    assert rep.finished is None and rep.duration_s >= 0
    assert rep.to_dict()["finished"] is None


def test_tiers_are_counted_and_shown_apart() -> None:
    rep = report()
    rep.add(record(Verdict.FAIL, feature="contract-fail", message="one defect"))
    extension = record(Verdict.FAIL, feature="ext-fail", message="another")
    extension.tier = "extension"
    extension.evidence = {"source": "mlxcel API reference"}
    rep.add(extension)
    rep.add(record(Verdict.PASS, feature="ext-pass"))
    assert rep.tier_counts()["contract"]["FAIL"] == 1
    assert rep.tier_counts()["extension"]["FAIL"] == 1
    assert "[FAIL: 1 contract, 1 extension, one per defect, seen in 2 features]" in \
        rep.summary_line()
    markdown = rep.to_markdown()
    assert "## Contract checks" in markdown and "## Extension checks" in markdown
    assert markdown.index("ext-fail") > markdown.index("## Extension checks")
    assert "mlxcel API reference" in markdown
    assert rep.to_dict()["summary"]["tiers"]["extension"]["FAIL"] == 1


def test_lenient_and_inconclusive_are_verdicts_of_their_own(tmp_path: Path) -> None:
    """docs/conformance/verdicts.md: each is counted, written and shown as itself, never as a
    FAIL, an UNSUPPORTED or a PASS, and leaves no defect."""
    rep = report()
    rep.add(record(Verdict.PASS, feature="errors.invalid", checks=["error_status"]))
    rep.add(record(Verdict.LENIENT, feature="errors.invalid", checks=["error_status"],
                   message="HTTP 200 for a request the API rejects with 400 (messages_empty)"))
    rep.add(record(Verdict.INCONCLUSIVE, feature="structured", checks=["structured_output_valid"],
                   message="the answer was cut by max_tokens after 12 characters"))
    rep.finish(START + timedelta(seconds=1))
    counts = rep.counts()
    assert counts[Verdict.LENIENT] == 1 and counts[Verdict.INCONCLUSIVE] == 1
    assert counts[Verdict.FAIL] == counts[Verdict.UNSUPPORTED] == counts[Verdict.PASS] == 0
    assert ", 1 LENIENT, 1 INCONCLUSIVE [FAIL: 0 contract, 0 extension," in rep.summary_line()
    assert rep.distinct_defects() == []
    data = json.loads(rep.write(tmp_path)[0].read_text(encoding="utf-8"))
    assert data["summary"]["tiers"]["contract"]["LENIENT"] == 1
    assert [r["verdict"] for r in data["records"]] == ["LENIENT", "INCONCLUSIVE"]
    assert data["summary"]["distinct_defects"] == 0
    assert Report.from_dict(data).to_dict() == data
    markdown = (tmp_path / "conformance.md").read_text(encoding="utf-8")
    assert "| tier | PASS | FAIL | UNSUPPORTED | ERROR | LENIENT | INCONCLUSIVE |" in markdown
    assert "| contract | 0 | 0 | 0 | 0 | 1 | 1 |" in markdown
    assert "| errors.invalid | LENIENT | `error_status` | HTTP 200 for a request" in markdown
    assert "| structured | INCONCLUSIVE | `structured_output_valid` |" in markdown


def test_a_report_written_before_the_new_verdicts_reads_them_back() -> None:
    """Rows of LENIENT and INCONCLUSIVE findings once written as UNSUPPORTED are read back as
    what they were; a plain UNSUPPORTED stays one."""
    old = {"target": "t", "profile": "p", "started": START.isoformat(), "finished": None,
           "records": [
               {"family": "chat", "feature": "errors", "verdict": "UNSUPPORTED",
                "message": "Skipped: LENIENT: error_status: HTTP 200 for a request the API "
                "rejects with 400 (not a FAIL; UNSUPPORTED in the report)"},
               {"family": "chat", "feature": "other", "verdict": "UNSUPPORTED",
                "message": "profile p does not claim family chat"}]}
    lenient, unsupported = Report.from_dict(old).records
    assert lenient.verdict is Verdict.LENIENT and lenient.checks == ["error_status"]
    assert lenient.message == "HTTP 200 for a request the API rejects with 400"
    assert unsupported.verdict is Verdict.UNSUPPORTED
