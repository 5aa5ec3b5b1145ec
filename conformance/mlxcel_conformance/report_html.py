"""The conformance report as one self-contained HTML page (``conformance.html``).

Inline CSS, no script, no external resource: the file opens from disk in any browser and can be
attached to an issue. The matrix is ``<table id="matrix">``, one row per feature with the id
``anchor(family, feature)`` so a comparison page can link to a row; a failing row holds its
evidence (and a golden case its expected/got block) in a ``<details>`` element. One FAIL per
defect: the row that first showed a defect is its FAIL row and names where else it was seen;
a row that saw only defects counted elsewhere is a ``repeat of #N`` linking there.
"""

from __future__ import annotations

import html
import json
import re
from typing import Any

from .defects import RowRole, distinct, row_roles
from .golden_diff import format_case
from .report import Verdict

HTML_NAME = "conformance.html"

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1f24;max-width:80rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;margin:1rem 0;width:100%}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}code,pre{font:12px/1.4 ui-monospace,monospace}
pre{white-space:pre-wrap;background:#f6f8fa;padding:.5rem;margin:.3rem 0;max-height:30rem;
overflow:auto}
.v{font-weight:600;white-space:nowrap}.PASS{color:#1a7f37}.FAIL{color:#cf222e}
.UNSUPPORTED{color:#6e7781}.ERROR{color:#9a6700}.LENIENT{color:#8250df}
.INCONCLUSIVE{color:#57606a;font-style:italic}.repeat{color:#6e7781}.summary{background:#f6f8fa;padding:.5rem}
tr:target{outline:2px solid #0969da}.msg{white-space:pre-wrap}.v a{color:inherit}
"""


def anchor(family: str, feature: str) -> str:
    """The row id of a feature: stable across peers, safe in HTML ids and Markdown anchors."""
    return "f-" + re.sub(r"[^a-z0-9]+", "-", f"{family}-{feature}".lower()).strip("-")


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{esc(title)}</title><style>{STYLE}</style></head>\n"
        f"<body>\n<h1>{esc(title)}</h1>\n{body}\n</body></html>\n"
    )


def evidence_text(record: dict[str, Any]) -> str:
    """What a person needs to act on a failure: the golden diff block, else the evidence JSON."""
    evidence = record.get("evidence") or {}
    parts = []
    if "golden_transcript" in record.get("checks", []) and isinstance(evidence.get("diffs"), list):
        case = str(evidence.get("case", record.get("feature", "")))
        parts.append(format_case(case, str(evidence.get("mode", "?")), evidence["diffs"]))
    if evidence:
        parts.append(json.dumps(evidence, indent=2, ensure_ascii=False, sort_keys=True))
    return "\n\n".join(parts)


def _link(family: str, feature: str) -> str:
    return f"<a href=\"#{anchor(family, feature)}\">{esc(family)} {esc(feature)}</a>"


def _fail_cells(record: dict[str, Any], role: RowRole | None) -> tuple[str, str, str]:
    """The class, label and message head of a FAIL row: one FAIL per defect, a repeat naming
    where its defects are counted."""
    label = "FAIL" + (f" ({record['severity']})" if record.get("severity") else "")
    if role is None:
        return "FAIL", esc(label), ""
    if role.repeat:
        numbers = ", ".join(f"#{number}" for number, _ in role.counted_at)
        counted = ", ".join(dict.fromkeys(_link(*where) for _, where in role.counted_at))
        return ("repeat", f"repeat of {esc(numbers)}",
                f"<div>the same defect, counted once at {counted}</div>")
    seen = role.also_seen(record["family"], record["feature"])
    also = (f"<div>also seen in: {', '.join(_link(*where) for where in seen)}</div>"
            if seen else "")
    return "FAIL", esc(label), also


def _row(record: dict[str, Any], roles: dict[tuple[str, str], RowRole]) -> str:
    verdict = str(record["verdict"])
    css, label, head = esc(verdict), esc(verdict), ""
    if verdict == "FAIL":
        css, label, head = _fail_cells(record, roles.get((record["family"], record["feature"])))
    checks = ", ".join(f"<code>{esc(c)}</code>" for c in record.get("checks", []))
    detail = f"{head}<div class=\"msg\">{esc(record.get('message', ''))}</div>"
    evidence = evidence_text(record)
    if evidence:
        detail += f"<details><summary>evidence</summary><pre>{esc(evidence)}</pre></details>"
    return (
        f"<tr id=\"{anchor(record['family'], record['feature'])}\">"
        f"<td>{esc(record['family'])}</td><td>{esc(record['feature'])}</td>"
        f"<td class=\"v {css}\">{label}</td><td>{checks}</td><td>{detail}</td></tr>"
    )


def _defects(records: list[dict[str, Any]]) -> str:
    """The distinct defects behind the FAILs (``<table id="defects">``), each feature linked to
    its row."""
    found = distinct(records)
    if not found:
        return ""
    rows = "".join(
        f"<tr><td>{number}</td><td class=\"msg\">{esc(d.message)}</td><td>"
        + ", ".join(f"<code>{esc(c)}</code>" for c in d.checks) + "</td><td>"
        + ", ".join(f"<a href=\"#{anchor(family, feature)}\">{esc(feature)}</a>"
                    for family, feature in d.features)
        + f"</td><td>{esc(d.source)}</td></tr>"
        for number, d in enumerate(found, 1))
    return (f"<h2 id=\"distinct-defects\">Distinct defects: {len(found)}</h2>\n"
            "<p>Each row is one thing the server does wrong (FAILs grouped by check and cause), "
            "with every feature it fails.</p>\n<table id=\"defects\"><tr><th>#</th>"
            f"<th>defect</th><th>checks</th><th>features</th><th>source</th></tr>{rows}</table>\n")


def render_report(report: dict[str, Any], title: str = "Conformance report",
                  preamble: str = "") -> str:
    """The page for one report, given ``Report.to_dict()`` (or the JSON file's content)."""
    verdicts = list(report.get("summary", {}).get("counts", {})) or [v.value for v in Verdict]
    families = "".join(
        f"<tr><td>{esc(family)}</td>" + "".join(f"<td>{row.get(v, 0)}</td>" for v in verdicts)
        + "</tr>"
        for family, row in report.get("families", {}).items()
    )
    records = report.get("records", [])
    roles = row_roles(distinct(records))
    rows = "\n".join(_row(record, roles) for record in records)
    body = (
        f"{preamble}<p class=\"summary\"><code>{esc(report['summary']['line'])}</code></p>\n"
        "<h2>Families</h2>\n<table id=\"families\"><tr><th>family</th>"
        + "".join(f"<th>{esc(v)}</th>" for v in verdicts) + f"</tr>{families}</table>\n"
        + _defects(report.get("records", []))
        + "<h2>Features</h2>\n<table id=\"matrix\"><tr><th>family</th><th>feature</th>"
        f"<th>verdict</th><th>checks</th><th>message and evidence</th></tr>\n{rows}\n</table>"
    )
    return page(title, body)
