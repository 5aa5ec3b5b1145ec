"""The published pages of a peers run, all under one directory (``docs/conformance/``):

- ``<peer>.json``: the suite's ``conformance.json`` plus a ``peer`` block (command, version,
  profile, golden mode);
- ``<peer>.md`` and ``<peer>.html``: that peer's matrix, then one evidence section per
  non-passing feature, each under an anchor named by ``report_html.anchor``;
- ``index.md`` and ``index.html``: the comparison, one column per server, one row per feature,
  each cell linking to the row's evidence in the peer's page.

Every ``<peer>.json`` found in the directory gets a column, so a peer measured once (e.g. a
llama-server built by hand) stays on the page until its file is removed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..defects import distinct, row_roles
from ..report import Report
from ..report_html import anchor, esc, evidence_text, page, render_report

# Columns in this order when present; others follow alphabetically.
PEER_ORDER = ("mlxcel", "mlx-lm", "llama-server", "vllm-mlx")
INDEX = "index"


def peer_document(report: Report, peer: dict[str, Any]) -> dict[str, Any]:
    return {"peer": peer, **report.to_dict()}


def _fence(text: str) -> str:
    return "```text\n" + text.replace("```", "'''") + "\n```"


def peer_markdown(doc: dict[str, Any]) -> str:
    peer = doc["peer"]
    report = Report.from_dict(doc)
    # The suite's own matrix (summary line first), its title replaced by the peer's.
    matrix = report.to_markdown(link=lambda family, feature: f"#{anchor(family, feature)}"
                                ).split("\n", 1)[1]
    lines = [
        f"# {peer['name']}: conformance",
        "",
        f"- server: {peer.get('description', '')} ({peer.get('version', 'unknown')})",
        f"- command: `{peer.get('command', '')}`",
        f"- profile `{doc['profile']}`, goldens `{peer.get('goldens', 'shape')}`, "
        f"run {doc['started']}",
        *_run_settings(peer),
        f"- also as [HTML]({peer['name']}.html); comparison: [index](index.md)",
        matrix,
        "## Evidence",
        "",
    ]
    labels = _labels(doc)
    for record in doc["records"]:
        if record["verdict"] == "PASS":
            continue
        label = labels[(record["family"], record["feature"])]
        lines += [f'<a id="{anchor(record["family"], record["feature"])}"></a>', "",
                  f"### {record['family']} / {record['feature']}: {label}", ""]
        # A golden's message is its diff block, which the evidence repeats.
        if record.get("message") and "diffs" not in (record.get("evidence") or {}):
            lines += [_fence(record["message"]), ""]
        evidence = evidence_text(record)
        if evidence:
            lines += [_fence(evidence), ""]
    return "\n".join(lines) + "\n"


def _run_settings(peer: dict[str, Any]) -> list[str]:
    """The families run and the request timeout, where the page records them."""
    if "families" not in peer:
        return []
    return [f"- families: {peer['families']}; request timeout: "
            f"{peer.get('request_timeout', 'unknown')}"]


def peer_html(doc: dict[str, Any]) -> str:
    peer = doc["peer"]
    settings = "".join(f"{esc(line[2:])}<br>" for line in _run_settings(peer))
    preamble = (
        f"<p>{esc(peer.get('description', ''))} ({esc(peer.get('version', 'unknown'))})<br>"
        f"command: <code>{esc(peer.get('command', ''))}</code><br>{settings}"
        f"profile <code>{esc(doc['profile'])}</code>, goldens "
        f"<code>{esc(peer.get('goldens', 'shape'))}</code>; "
        f"<a href=\"{INDEX}.html\">comparison</a></p>\n"
    )
    return render_report(doc, title=f"{peer['name']}: conformance", preamble=preamble)


def write_peer(directory: Path, doc: dict[str, Any]) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    name = doc["peer"]["name"]
    written = {
        directory / f"{name}.json": json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
        directory / f"{name}.md": peer_markdown(doc),
        directory / f"{name}.html": peer_html(doc),
    }
    for path, text in written.items():
        path.write_text(text, encoding="utf-8")
    return list(written)


def load_peers(directory: Path) -> list[dict[str, Any]]:
    docs = []
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "peer" in data and "records" in data:
            docs.append(data)

    def order(doc: dict[str, Any]) -> tuple[int, str]:
        name = doc["peer"]["name"]
        return (PEER_ORDER.index(name) if name in PEER_ORDER else len(PEER_ORDER), name)

    return sorted(docs, key=order)


def feature_rows(docs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Every (family, feature) any peer reported, in the first report's order, new ones after."""
    rows: dict[tuple[str, str], None] = {}
    for doc in docs:
        for record in doc["records"]:
            rows.setdefault((record["family"], record["feature"]), None)
    return list(rows)


def _verdicts(doc: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["family"], r["feature"]): r for r in doc["records"]}


def _labels(doc: dict[str, Any]) -> dict[tuple[str, str], str]:
    """Each feature's cell: its verdict, or ``repeat of #N`` for a FAIL whose defects are all
    counted at other features' rows (one FAIL per defect; N numbers the page's defect list)."""
    roles = row_roles(distinct(doc["records"]))
    labels = {}
    for record in doc["records"]:
        where = (record["family"], record["feature"])
        role = roles.get(where)
        labels[where] = record["verdict"]
        if record["verdict"] == "FAIL" and role is not None and role.repeat:
            labels[where] = "repeat of " + ", ".join(f"#{n}" for n, _ in role.counted_at)
    return labels


# The hostile family runs only with --robustness: its matrix is a page of its own.
ROBUSTNESS_LINE = ("The hostile `robustness` family (opt-in, `--robustness`) is compared on its "
                   "own page: [robustness.md](robustness.md).")


# The real model's comparison, in a folder of its own beside the fixture's pages.
REAL_DIR = "real"
FIXTURE_INTRO = ("Each peer served the same fixture model and ran the whole suite with its own "
                 "`--profile` and `--goldens shape`: `python -m mlxcel_conformance.peers --out "
                 "docs/conformance --peers NAMES` (`--llama-server PATH`, `--vllm-mlx PATH` for "
                 "those two; `nox -s peers -- ARGS` runs the same). A cell links to the evidence.")
REAL_LINE = ("The same servers on a real instruct model (SmolLM2-135M-Instruct, Q4_1 GGUF, "
             "identical weights for every server): [real/index.md](real/index.md).")
REAL_INTRO = (
    "Each peer served one real instruct model (SmolLM2-135M-Instruct Q4_1 unless a page names "
    "another) on identical weights: mlxcel and "
    "llama-server the GGUF file itself, mlx_lm.server (and vllm-mlx) the mlx-lm directory "
    "`mlxcel-convert FILE.gguf OUT_DIR` writes from it. Each was judged as the real-model lane "
    "of `nox -s tests` judges the reference (`fixtures/real_model_lane.py`): the contract tier "
    "(the reference under `mlxcel-contract`, each peer under its own profile), the lane's "
    "families only (chat, responses, anthropic, completions, llama-native, tokenize), "
    "`--goldens shape`, and waits and answer lengths taken from the pace the suite measures. "
    "Command: `python -m mlxcel_conformance.peers --out docs/conformance --real-model --peers "
    "NAMES` (`--llama-server PATH` for llama-server; `--gguf FILE` for another GGUF). A cell "
    "links to the evidence; the fixture model's comparison is [../index.md](../index.md).")


def index_markdown(docs: list[dict[str, Any]], real: bool = False,
                   real_beside: bool = False) -> str:
    """The comparison page: the fixture's, or with ``real`` the real model's; ``real_beside``:
    the fixture's page links to the real model's."""
    names = [doc["peer"]["name"] for doc in docs]
    intro = [REAL_INTRO] if real else [FIXTURE_INTRO, "", ROBUSTNESS_LINE] + (
        ["", REAL_LINE] if real_beside else [])
    title = "Conformance on a real model" if real else "Conformance"
    lines = [f"# {title}: servers side by side", "", *intro, "",
             "| server | version | summary |", "|---|---|---|"]
    for doc in docs:
        peer = doc["peer"]
        lines.append(f"| [{peer['name']}]({peer['name']}.md) | {peer.get('version', '')} | "
                     f"`{doc['summary']['line']}` |")
    lines += precision_table(docs, "../" if real else "")  # verdicts.md beside the fixture's
    lines += ["", "| family | feature | tier | " + " | ".join(names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    by_peer = [_verdicts(doc) for doc in docs]
    labels = [_labels(doc) for doc in docs]
    for family, feature in feature_rows(docs):
        tier = next((v[(family, feature)].get("tier", "contract") for v in by_peer
                     if (family, feature) in v), "contract")
        cells = []
        for name, label in zip(names, labels, strict=True):
            shown = label.get((family, feature))
            if shown is None:
                cells.append("—")
            elif shown == "PASS":
                cells.append("PASS")
            else:
                cells.append(f"[{shown}]({name}.md#{anchor(family, feature)})")
        lines.append(f"| {family} | {feature} | {tier} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def tier_counts(doc: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Verdicts per tier of one peer's run."""
    table: dict[str, dict[str, int]] = {}
    for record in doc["records"]:
        row = table.setdefault(record.get("tier", "contract"), {})
        row[record["verdict"]] = row.get(record["verdict"], 0) + 1
    return table


def precision_table(docs: list[dict[str, Any]], docs_root: str = "") -> list[str]:
    """Per peer, FAILs per tier, and how many FAILs name the source that says the server is
    wrong (every one should)."""
    lines = ["", "## Precision: FAILs per tier", "",
             "Contract FAILs each cite the public contract (spec section or real recording) the "
             "server breaks; extension FAILs judge mlxcel's own features and count only where "
             "the profile claims them.", "",
             "A distinct defect is one thing the server does wrong: its FAILs grouped by root "
             "cause across routes and forms. Each defect is one FAIL row (counted here, per "
             "tier), at the feature that first showed it; a feature that saw only defects "
             "counted elsewhere is a `repeat` (each peer's page lists every defect once, with "
             "the features it fails).", "",
             "LENIENT rows are requests the public API calls invalid that the server accepted; "
             "INCONCLUSIVE rows are checks its answer could not decide: neither is a FAIL "
             f"([verdicts]({docs_root}verdicts.md)).", "",
             "| server | profile | contract FAIL | contract PASS | extension FAIL | "
             "extension PASS | UNSUPPORTED | LENIENT | INCONCLUSIVE | FAILs citing a source | "
             "distinct defects |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for doc in docs:
        tiers = tier_counts(doc)
        contract, extension = tiers.get("contract", {}), tiers.get("extension", {})
        unsupported, lenient, inconclusive = (contract.get(v, 0) + extension.get(v, 0)
                                              for v in ("UNSUPPORTED", "LENIENT", "INCONCLUSIVE"))
        rows = Report.from_dict(doc).fail_rows()  # one FAIL row per defect
        found = distinct(doc["records"])
        cited = sum(1 for defect in found if defect.source)
        # a page lists its defects (and has the anchor) only when there are some
        defects = (f"[{len(found)}]({doc['peer']['name']}.md#distinct-defects)" if found
                   else "0")
        lines.append(
            f"| {doc['peer']['name']} | `{doc['profile']}` | {rows['contract']} | "
            f"{contract.get('PASS', 0)} | {rows['extension']} | "
            f"{extension.get('PASS', 0)} | {unsupported} | {lenient} | "
            f"{inconclusive} | {cited} of {len(found)} | "
            f"{defects} |")
    return lines


def index_html(docs: list[dict[str, Any]], real: bool = False) -> str:
    names = [doc["peer"]["name"] for doc in docs]
    summary = "".join(
        f"<tr><td><a href=\"{esc(doc['peer']['name'])}.html\">{esc(doc['peer']['name'])}</a>"
        f"</td><td>{esc(doc['peer'].get('version', ''))}</td>"
        f"<td><code>{esc(doc['summary']['line'])}</code></td></tr>"
        for doc in docs
    )
    labels = [_labels(doc) for doc in docs]
    rows = []
    for family, feature in feature_rows(docs):
        cells = []
        for name, label in zip(names, labels, strict=True):
            shown = label.get((family, feature))
            if shown is None:
                cells.append("<td>—</td>")
                continue
            css = "repeat" if shown.startswith("repeat") else esc(shown)
            href = f"{esc(name)}.html#{anchor(family, feature)}"
            cells.append(f"<td class=\"v {css}\"><a href=\"{href}\">{esc(shown)}</a></td>")
        rows.append(f"<tr><td>{esc(family)}</td><td>{esc(feature)}</td>{''.join(cells)}</tr>")
    body = (
        "<table id=\"servers\"><tr><th>server</th><th>version</th><th>summary</th></tr>"
        f"{summary}</table>\n<table id=\"matrix\"><tr><th>family</th><th>feature</th>"
        + "".join(f"<th>{esc(n)}</th>" for n in names) + "</tr>\n" + "\n".join(rows)
        + "\n</table>"
    )
    title = "Conformance on a real model" if real else "Conformance"
    return page(f"{title}: servers side by side", body)


def write_index(directory: Path, real: bool = False) -> list[Path]:
    """``index.{md,html}`` of every ``<peer>.json`` in ``directory``; with ``real``, the real
    model's (the fixture's links to it where ``REAL_DIR/index.md`` exists)."""
    docs = load_peers(directory)
    md, html_page = directory / f"{INDEX}.md", directory / f"{INDEX}.html"
    beside = not real and (directory / REAL_DIR / f"{INDEX}.md").is_file()
    md.write_text(index_markdown(docs, real, beside), encoding="utf-8")
    html_page.write_text(index_html(docs, real), encoding="utf-8")
    return [md, html_page]
