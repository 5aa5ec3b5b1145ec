"""Render the results page: links to every committed conformance matrix and benchmark plot.

Matrices are the reports written under `docs/conformance/` (one `<server>.md` each) and plots
the PNG files under `docs/benchmarks/`; the page lists what exists, so it never links to a
file that is not there.
"""

from __future__ import annotations

from pathlib import Path


def _title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


POLICY = "verdicts.md"


def render(docs_dir: Path) -> dict[str, str]:
    # verdicts.md is the policy the matrices follow, not a matrix
    matrices = sorted(p for p in (docs_dir / "conformance").glob("*.md") if p.name != POLICY)
    plots = sorted((docs_dir / "benchmarks").glob("*.png"))
    benchmarks_page = docs_dir / "benchmarks.md"
    lines = [
        "# Results", "",
        "Conformance matrices and benchmark plots committed to this repository. Each matrix is "
        "a `mlxcel-conformance --report DIR` run (`conformance.md`) against one server; see "
        "[Test your server](testing.md#reading-the-report) for how to read it, and the "
        "[verdict policy](conformance/verdicts.md) for what each verdict means.", "",
        "## Conformance matrices", "",
    ]
    if matrices:
        for path in matrices:
            rel = path.relative_to(docs_dir).as_posix()
            lines.append(f"- [{path.stem}: {_title(path)}]({rel})")
    else:
        lines.append("No matrix is committed yet. Produce one for any server with "
                     "`mlxcel-conformance --base-url URL --profile NAME --report DIR`; the "
                     "macOS workflow uploads the reference server's matrix as an artifact.")
    lines += ["", "## Benchmarks", ""]
    if benchmarks_page.exists():
        lines.append("- [Benchmarks](benchmarks.md)")
    for path in plots:
        rel = path.relative_to(docs_dir).as_posix()
        lines += [f"### {path.stem}", "", f"![{path.stem}]({rel})", ""]
    if not plots and not benchmarks_page.exists():
        lines.append("No benchmark plot is committed yet; the macOS workflow uploads the "
                     "benchmark it runs on a small hub model as an artifact.")
    return {"results.md": "\n".join(lines) + "\n"}
