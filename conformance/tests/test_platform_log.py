"""A peer whose log shows a platform error: its generic 5xx answers are ERROR/platform, not FAIL
(vllm-mlx 0.6.0's llguidance kernel exists only on Metal)."""

from __future__ import annotations

from mlxcel_conformance.peers.platform_log import platform_line, reclassify
from mlxcel_conformance.report import Record, Report, Verdict

GENERIC = "Internal server error during generation"
LOG = """INFO:vllm_mlx.server:Constrained decoding enabled response_format.type=json_schema
ERROR:vllm_mlx.scheduler:Error in batch generation step: failed to construct strict JSON Schema \
token mask: [metal_kernel] No Metal back-end.
ERROR:vllm_mlx.server:Request failed with an internal error during generation
"""


def _report() -> Report:
    report = Report(target="t", profile="vllm-mlx")
    report.add(Record("chat", "chat.structured.json_schema", Verdict.FAIL,
                      checks=["http_status"], message="expected HTTP 200, got 500",
                      evidence={"defect": f"http_status: HTTP 500: {GENERIC}"}))
    report.add(Record("anthropic", "anthropic.errors.invalid_body", Verdict.FAIL,
                      checks=["error_status"], message="HTTP 500 for a client error (x)",
                      evidence={"defect": "error_status: HTTP 500 for a client error: the "
                                "server crashed on input it should reject"}))
    return report


def test_generic_5xx_answers_are_platform_errors_when_the_log_says_so() -> None:
    report = _report()
    changed = reclassify(report, LOG, GENERIC)
    assert [r.feature for r in changed] == ["chat.structured.json_schema"]
    verdicts = {r.feature: r.verdict for r in report.records}
    assert verdicts == {"chat.structured.json_schema": Verdict.ERROR,
                        "anthropic.errors.invalid_body": Verdict.FAIL}
    assert changed[0].message.startswith("ERROR/platform: ")
    assert "No Metal back-end" in changed[0].evidence["platform_log"]
    assert report.to_dict()["summary"]["distinct_defects"] == 1


def test_without_a_platform_error_in_the_log_nothing_changes() -> None:
    report = _report()
    assert reclassify(report, "ERROR: Request failed with an internal error", GENERIC) == []
    assert reclassify(report, LOG, None) == []
    assert all(r.verdict is Verdict.FAIL for r in report.records)
    assert platform_line("INFO: all fine") is None
