"""Render the configuration page from the command-line definitions themselves.

`mlxcel-server` flags come from `mlxcel.cli.build_parser()`; `mlxcel-conformance` options from
the pytest plugin's `pytest_addoption`. Defaults are read with the server's environment
variables removed, so the page shows the built-in defaults, not the builder's environment.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_ENV = re.compile(r"\[env ([A-Z0-9_]+)\]")
_ENV_PREFIXES = ("LLAMA_ARG_", "LLAMA_API_KEY", "MLXCEL_")


def cell(text: str) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


@contextmanager
def clean_environment() -> Iterator[None]:
    """Hide the variables the CLI reads, so defaults are the built-in ones."""
    saved = {k: v for k, v in os.environ.items() if k.startswith(_ENV_PREFIXES)}
    for key in saved:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(saved)


def _default(action: argparse.Action) -> str:
    if action.default in (None, argparse.SUPPRESS) or isinstance(
        action, (argparse._HelpAction, argparse._VersionAction)
    ):
        return ""
    return f"`{action.default}`"


def server_rows(parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        flags = ", ".join(f"`{flag}`" for flag in action.option_strings)
        help_text = action.help or ""
        env = _ENV.search(help_text)
        description = _ENV.sub("", help_text).strip()
        if action.choices:
            description += " choices: " + ", ".join(f"`{c}`" for c in action.choices)
        env_cell = f"`{env.group(1)}`" if env else ""
        yield f"| {flags} | {env_cell} | {_default(action)} | {cell(description)} |"


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


def render() -> dict[str, str]:
    from mlxcel.cli import build_parser

    with clean_environment():
        server = list(server_rows(build_parser()))
    lines = [
        "# Configuration", "",
        "Generated at build time from the command-line definitions, so it always matches "
        "`mlxcel-server --help` and `mlxcel-conformance --help`.", "",
        "## mlxcel-server", "",
        "Flag names follow llama-server's; where an environment variable is listed it is read "
        "when the flag is absent (a flag on the command line wins).", "",
        "| flag | environment variable | default | description |", "|---|---|---|---|",
        *server, "",
        "## mlxcel-conformance", "",
        "These options select the server under test and the report; every other argument is "
        "passed to pytest (`-k chat`, `-x`, `-q`).", "",
        "| option | default | description |", "|---|---|---|",
        *suite_rows(), "",
    ]
    return {"configuration.md": "\n".join(lines)}
