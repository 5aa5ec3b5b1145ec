"""Render the configuration page: `mlxcel-server`'s settings from their declarations
(`mlxcel.settings`), `mlxcel-conformance`'s options from the pytest plugin's `pytest_addoption`.

The page is committed as `docs/configuration.md` (readable without building the site) and a
test keeps it equal to what this renders; after changing a setting or a suite option, run
`python docs/hooks/configuration.py` to write it again.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[1] / "configuration.md"


def cell(text: str) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


class _OptionRecorder:
    """Stands in for pytest's parser and option group: records `addoption` calls."""

    def __init__(self) -> None:
        self.options: list[tuple[tuple[str, ...], dict[str, Any]]] = []

    def getgroup(self, *_args: Any, **_kwargs: Any) -> _OptionRecorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.append((names, kwargs))


def suite_rows() -> Iterator[str]:
    from mlxcel_conformance import plugin

    recorder = _OptionRecorder()
    plugin.pytest_addoption(recorder)  # type: ignore[arg-type]
    for names, kwargs in recorder.options:
        flags = ", ".join(f"`{name}`" for name in names)
        default = kwargs.get("default")
        default_cell = "" if default is None else f"`{default}`"
        description = str(kwargs.get("help", ""))
        if kwargs.get("choices"):
            description += " choices: " + ", ".join(f"`{c}`" for c in kwargs["choices"])
        yield f"| {flags} | {default_cell} | {cell(description)} |"


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
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    PAGE.write_text(render(), encoding="utf-8")
    sys.stdout.write(f"wrote {PAGE}\n")
