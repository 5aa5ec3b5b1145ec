"""The HTML report opened in a real headless browser (Debian's ``chromium``): the page parses
and the matrix is in the DOM, one row per feature, with the failing row's evidence.

``nox -s tests`` (the README's test command, which CI runs) installs Debian's ``chromium`` with apt
when no browser is on PATH and then sets ``MLXCEL_REQUIRE_BROWSER=1``: from there (and under
``CI``) a missing browser is a failure. Run bare, on a machine with neither Chromium nor Chrome
and no apt (a fresh Mac), the test is skipped with the install command.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mlxcel_conformance.peers import pages
from mlxcel_conformance.report import Record, Report, Verdict
from mlxcel_conformance.report_html import HTML_NAME, anchor, render_report

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome",
            "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome")


def _browser() -> str:
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    message = "no headless browser found; install Debian's: apt-get install -y chromium"
    if os.environ.get("CI") or os.environ.get("MLXCEL_REQUIRE_BROWSER"):
        pytest.fail(message)
    pytest.skip(message)


def dump_dom(page: Path, profile_dir: Path) -> str:
    """The DOM chromium built from ``page``, serialized after parsing."""
    done = subprocess.run(
        [_browser(), "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--no-first-run", f"--user-data-dir={profile_dir}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _report() -> Report:
    report = Report(target="http://127.0.0.1:8080", profile="mlx-lm")
    report.add(Record("chat", "chat.basic", Verdict.PASS))
    report.add(Record("chat", "golden.chat.hello", Verdict.FAIL, checks=["golden_transcript"],
                      severity="medium", message="golden chat/hello <b>not bold</b>",
                      evidence={"mode": "shape", "case": "chat/hello",
                                "diffs": ["status: expected 200, got 404"]}))
    report.add(Record("tokenize", "tokenize.basic", Verdict.UNSUPPORTED, message="no"))
    report.finish()
    return report


def _matrix(dom: str) -> str:
    match = re.search(r'<table id="matrix">(.*?)</table>', dom, re.S)
    assert match, "the matrix table is not in the DOM"
    return match.group(1)


def test_report_page_renders_its_matrix(tmp_path: Path) -> None:
    page = tmp_path / HTML_NAME
    page.write_text(render_report(_report().to_dict()), encoding="utf-8")
    matrix = _matrix(dump_dom(page, tmp_path / "profile"))
    # The parser inserts <tbody>: proof the browser built a table, not that we wrote one.
    assert matrix.lstrip().startswith("<tbody>")
    rows = re.findall(r'<tr id="(f-[^"]+)"', matrix)
    assert rows == [anchor("chat", "chat.basic"), anchor("chat", "golden.chat.hello"),
                    anchor("tokenize", "tokenize.basic")]
    assert 'class="v FAIL"' in matrix and "FAIL (medium)" in matrix
    assert "&lt;b&gt;not bold&lt;/b&gt;" in matrix  # messages are text, never markup
    assert "- expected: 200" in matrix and "+ got:      404" in matrix


def test_comparison_page_renders_one_column_per_server(tmp_path: Path) -> None:
    out = tmp_path / "pages"
    for name in ("mlxcel", "mlx-lm"):
        pages.write_peer(out, pages.peer_document(_report(), {"name": name, "version": "1"}))
    pages.write_index(out)
    matrix = _matrix(dump_dom(out / "index.html", tmp_path / "profile"))
    assert "<th>mlxcel</th><th>mlx-lm</th>" in matrix
    assert f'href="mlx-lm.html#{anchor("chat", "golden.chat.hello")}"' in matrix
