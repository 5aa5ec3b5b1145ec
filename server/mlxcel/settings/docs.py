"""The ``mlxcel-server`` part of ``docs/configuration.md``: one table per settings group, from
the same declarations as ``--help``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .catalog import OPTIONS
from .option import Option


def cell(text: str) -> str:
    return " ".join(str(text).replace("|", "\\|").split())


def _flags(option: Option[Any]) -> str:
    flags = [f"`{flag}`" for flag in option.all_flags]
    return ", ".join(flags) if flags else "(environment only)"


def _description(option: Option[Any]) -> str:
    text = option.help
    if option.off_flags:
        text += f"; {', '.join(option.off_flags)} turns it off"
    if option.env_inverted:
        text += f"; a true {' or '.join(option.env)} turns it off"
    if option.choices:
        text += "; one of " + ", ".join(f"`{c}`" for c in option.choices)
    return cell(text)


def rows(options: Iterable[Option[Any]]) -> Iterator[str]:
    group = None
    for option in options:
        if option.group != group:
            group = option.group
            yield from ("", f"### {group}", "",
                        "| flag | environment variable | default | description |",
                        "|---|---|---|---|")
        env = ", ".join(f"`{name}`" for name in option.env)
        yield (f"| {_flags(option)} | {env} | {cell(option.default_text())} | "
               f"{_description(option)} |")


def server_section() -> list[str]:
    """The markdown lines of the ``## mlxcel-server`` section."""
    return [
        "## mlxcel-server", "",
        "Flag names follow llama-server's; where an environment variable is listed it is read "
        "when the flag is absent (a flag on the command line wins; of several variables the "
        "first one set). Boolean variables take `1`, `true`, `on`, `yes`, `enabled` or `0`, "
        "`false`, `off`, `no`, `disabled`; any other value stops the server with a usage error. "
        "`-h`, `--help` prints them all and `--version` the version.",
        *rows(OPTIONS),
    ]
