"""Render the configuration page: `mlxcel-server`'s settings from their declarations
(`mlxcel.settings`), `mlxcel-conformance`'s options as its `--help` lists them (the pytest
plugins' `pytest_addoption`) and its exit statuses.

The page is committed as `docs/configuration.md` (readable without building the site) and a
test keeps it equal to what this renders; after changing a setting or a suite option, run
`python docs/hooks/configuration.py` to write it again.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "configuration.md"


def cell(text: str) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


def suite_rows() -> Iterator[str]:
    from mlxcel_conformance.cli import suite_options

    for names, kwargs in suite_options():
        flags = ", ".join(f"`{name}`" for name in names)
        default = kwargs.get("default")
        default_cell = "" if default is None else f"`{default}`"
        description = str(kwargs.get("help", ""))
        if kwargs.get("choices"):
            description += " choices: " + ", ".join(f"`{c}`" for c in kwargs["choices"])
        yield f"| {flags} | {default_cell} | {cell(description)} |"


def exit_rows() -> Iterator[str]:
    from mlxcel_conformance.exit_codes import EXIT_STATUSES

    for status, meaning in EXIT_STATUSES:
        yield f"| {status} | {cell(meaning)} |"


def render() -> str:
    from mlxcel.settings.docs import server_section

    lines = [
        "# Configuration", "",
        "Generated from the settings' declarations by `python docs/hooks/configuration.py`, so "
        "it matches `mlxcel-server --help` and `mlxcel-conformance --help` (a test checks it).",
        "",
        *server_section(), "",
        "## mlxcel-conformance", "",
        "These options select the server under test and the report; every other argument is "
        "passed to pytest (`-k chat`, `-x`, `-q`).", "",
        "| option | default | description |", "|---|---|---|",
        *suite_rows(), "",
        "Exit statuses (`mlxcel-conformance --help` lists them too); 64 and up mean the suite "
        "stopped before its first check, with one `ERROR:` line saying why:", "",
        "| status | meaning |", "|---:|---|",
        *exit_rows(), "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {PAGE}\n")
