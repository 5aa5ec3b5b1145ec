"""How a run's distinct defects show: one FAIL row per defect in the matrix, the summary, the
terminal, the HTML page and the peers' pages, with every feature that met it (what
test_defects.py groups, shown)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from defect_cases import LOGPROBS, add_fail, raised

from mlxcel_conformance.defects import refusal
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.fail_lines import defect_lines
from mlxcel_conformance.goldens import check_golden
from mlxcel_conformance.peers import pages
from mlxcel_conformance.report import Record, Report, Verdict
from mlxcel_conformance.report_html import anchor, render_report


def _peer(name: str, failures: dict[str, str]) -> dict[str, object]:
    report = Report(target="http://x", profile=name)
    for feature, message in failures.items():
        add_fail(report, feature, raised("chat_completion_body", message))
    report.finish()
    return pages.peer_document(report, {"name": name, "description": name, "version": "1"})


def test_pages_count_and_list_each_defect_once(tmp_path: Path) -> None:
    pages.write_peer(tmp_path, _peer("llama-server", {
        "chat.json.body": LOGPROBS, "parity.chat.json": LOGPROBS,
        "chat.stream.framing": "chunk 3 changes ['created'] within one stream"}))
    pages.write_index(tmp_path)
    index = (tmp_path / "index.md").read_text()
    assert "distinct defects |" in index
    # FAIL rows, one per defect: 2 rows (each citing its source) for 3 failing features
    assert "| `llama-server` | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 2 of 2 | " \
        "[2](llama-server.md#distinct-defects) |" in index
    page = (tmp_path / "llama-server.md").read_text()
    assert '<a id="distinct-defects"></a>' in page and "## Distinct defects: 2" in page
    row = next(line for line in page.splitlines() if line.startswith("| 1 |"))
    assert LOGPROBS.replace("|", "\\|") in row
    assert f"[chat.json.body](#{anchor('chat', 'chat.json.body')})" in row
    assert f"[parity.chat.json](#{anchor('chat', 'parity.chat.json')})" in row
    html = (tmp_path / "llama-server.html").read_text()
    assert 'id="distinct-defects"' in html and "Distinct defects: 2" in html


VLLM_422 = json.dumps({"detail": [{"loc": ["body", "response_format", "json_schema"],
                                   "msg": "Field required", "type": "missing"}]})


def _one_defect_everywhere() -> Report:
    """vllm-mlx's 422 on `json_schema`, met by two routes' checks, field parity, a golden and
    an OpenAI SDK round trip; and one other defect."""
    report = Report(target="t", profile="vllm-mlx")
    refused = raised("http_status", "expected HTTP 200, got 422", defect=refusal(422, VLLM_422))
    add_fail(report, "chat.structured.json_schema", refused)
    add_fail(report, "responses.structured.json_schema", refused, family="responses")
    add_fail(report, "parity.chat.json", refused)
    with pytest.raises(ConformanceFailure) as info:
        check_golden({"status": 200, "content_type": "application/json", "body": {}},
                     {"status": 422, "content_type": "application/json", "body": {},
                      "_raw": VLLM_422}, "shape", "chat/json_schema")
    add_fail(report, "golden.chat.json_schema", info.value)
    said = f"UnprocessableEntityError: Error code: 422 - {json.loads(VLLM_422)!r}"
    report.add(Record("sdk-openai", "sdk.openai.structured", Verdict.FAIL,
                      checks=["UnprocessableEntityError"], message=said,
                      evidence={"source": "openai-python"}))
    add_fail(report, "chat.stream.framing",
          raised("sse_framing", "chunk 3 is not a data line"))
    report.finish()
    return report


def test_one_defect_across_routes_and_forms_is_one_fail_row(tmp_path: Path) -> None:
    """One FAIL row per defect: the matrix, the terminal, the summary, the HTML page and the
    comparison page show FAIL rows / distinct defects = 1.0, the records keep all six."""
    report = _one_defect_everywhere()
    found = report.distinct_defects()
    assert [len(d.features) for d in found] == [5, 1], [d.key for d in found]
    assert found[0].families == ["chat", "responses", "sdk-openai"]
    assert report.counts()[Verdict.FAIL] == 6  # every observation kept
    assert report.summary_line().startswith("mlxcel-conformance: 0 PASS, 2 FAIL,")
    assert "[FAIL: 2 contract, 0 extension, one per defect, seen in 6 features]" in \
        report.summary_line()
    assert report.to_dict()["summary"]["fail_rows"] == {"contract": 2, "extension": 0}
    markdown = report.to_markdown()
    rows = [line for line in markdown.splitlines() if line.startswith("| ")
            and line.count(" | ") >= 4 and not line.startswith("| #")]
    fail_rows = [row for row in rows if row.split(" | ")[1].startswith("FAIL")]
    repeats = [row for row in rows if row.split(" | ")[1].startswith("repeat of #1")]
    assert len(fail_rows) == len(found) == 2
    assert len(repeats) == 4
    first = next(row for row in fail_rows if row.startswith("| chat.structured.json_schema |"))
    assert ("also seen in: chat parity.chat.json, chat golden.chat.json_schema, responses "
            "responses.structured.json_schema, sdk-openai sdk.openai.structured") in first
    assert all("counted once at chat chat.structured.json_schema" in row for row in repeats)
    # the terminal: one FAIL line per defect, naming where else it was seen
    lines = defect_lines(report.records)
    assert len(lines) == 2 and lines[0].startswith("FAIL chat chat.structured.json_schema [")
    assert "also seen in: chat parity.chat.json" in lines[0]
    assert "also seen in" not in lines[1]
    # the HTML page and the comparison page alike
    html = render_report(report.to_dict())
    assert html.count('class="v FAIL"') == 2 and html.count('class="v repeat"') == 4
    pages.write_peer(tmp_path, pages.peer_document(report, {"name": "vllm-mlx",
                                                            "description": "v", "version": "1"}))
    pages.write_index(tmp_path)
    index = (tmp_path / "index.md").read_text()
    cells = [line.rsplit(" | ", 1)[-1] for line in index.splitlines()
             if line.startswith(("| chat |", "| responses |", "| sdk-openai |"))]
    assert sum(cell.startswith("[FAIL]") for cell in cells) == 2
    assert sum(cell.startswith("[repeat of #1](vllm-mlx.md#") for cell in cells) == 4
    page = (tmp_path / "vllm-mlx.md").read_text()
    assert "### chat / parity.chat.json: repeat of #1" in page
    assert "### chat / chat.structured.json_schema: FAIL" in page
    index_html = (tmp_path / "index.html").read_text()
    assert index_html.count('class="v repeat"') == 4 and index_html.count('class="v FAIL"') == 2
    assert "| vllm-mlx | `vllm-mlx` | 2 | 0 | 0 | 0 | 0 | 0 | 0 | 2 of 2 |" in index
