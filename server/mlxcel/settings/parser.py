"""argparse from the settings: one argument group per settings group, each help text ending in
the declared default and the environment variables; an environment variable that is set
becomes the flag's default (a flag on the command line wins)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .option import Option, SettingError, comma_list, file_path

METAVARS: dict[Any, str] = {int: "N", float: "X", comma_list: "A,B", file_path: "PATH"}


def help_text(option: Option[Any], off: bool = False) -> str:
    """``--help``'s line for ``option`` (``off``: for its ``--no-...`` flag). An off flag
    beside an on flag names that flag and which of the two is the default (``--no-slots``:
    "opposite of --slots (default: --slots)"), so its line never reads as the feature itself."""
    if off and option.flags:
        on = option.flags[0]
        default = on if option.default else option.off_flags[0]
        text = f"opposite of {on} (default: {default})"
    else:
        text = f"turn off: {option.help}" if off else option.help
        text = f"{text} (default: {option.default_text()})"
    if option.env:
        text += f" [env {', '.join(option.env)}]"
    return text.replace("%", "%%")


class SettingsParser(argparse.ArgumentParser):
    """Reports an unusable environment variable as a usage error when arguments are parsed."""

    env_errors: list[str]

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None,
    ) -> tuple[argparse.Namespace, list[str]]:
        if getattr(self, "env_errors", None):
            self.error(self.env_errors[0])
        return super().parse_known_args(args, namespace)


def _default(option: Option[Any], environ: Mapping[str, str], errors: list[str]) -> Any:
    try:
        found = option.from_env(environ)
    except SettingError as exc:
        errors.append(str(exc))
        found = None
    value = option.default if found is None else found[1]
    return list(value) if option.kind == "append" else value


def _add(group: argparse._ArgumentGroup, option: Option[Any], default: Any) -> None:
    if option.kind == "bool":
        if option.flags:
            group.add_argument(*option.flags, dest=option.dest, action="store_true",
                               default=default, help=help_text(option))
        if option.off_flags:
            group.add_argument(*option.off_flags, dest=option.dest, action="store_false",
                               default=default, help=help_text(option, off=True))
        return
    action = "append" if option.kind == "append" else "store"
    extra: dict[str, Any] = {} if option.kind == "append" else {"type": option.type}
    if option.choices is None:
        extra["metavar"] = METAVARS.get(option.type, option.dest.upper())
    group.add_argument(*option.flags, dest=option.dest, action=action, default=default,
                       choices=option.choices, help=help_text(option), **extra)


def build(options: Iterable[Option[Any]], *, prog: str, description: str, usage: str | None = None,
          environ: Mapping[str, str] | None = None) -> SettingsParser:
    """The parser of ``options``; environment-only options become namespace defaults."""
    env = os.environ if environ is None else environ
    parser = SettingsParser(prog=prog, description=description, usage=usage)
    parser.env_errors = []
    groups: dict[str, argparse._ArgumentGroup] = {}
    for option in options:
        default = _default(option, env, parser.env_errors)
        if not option.all_flags:
            parser.set_defaults(**{option.dest: default})
            continue
        if option.group not in groups:
            groups[option.group] = parser.add_argument_group(option.group)
        _add(groups[option.group], option, default)
    return parser
