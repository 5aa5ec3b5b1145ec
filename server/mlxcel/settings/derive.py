"""The config objects from parsed settings: each option's value goes to the field its
declaration names (``Option.to`` and ``Option.field``), clamped to its ``minimum``."""

from __future__ import annotations

import argparse
from typing import Any

from .catalog import OPTIONS
from .option import Target


def values(args: argparse.Namespace, to: Target | str) -> dict[str, Any]:
    """``{field: value}`` of every option whose value goes to ``to`` (or a family's section of
    that name); an empty string given for a setting whose default is unset counts as unset."""
    found = {}
    for option in OPTIONS:
        if option.destination != to:
            continue
        value = getattr(args, option.dest)
        if option.default is None and value == "":
            value = None
        found[option.target_field] = option.clamp(value)
    return found


def sections(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """``{section: {field: value}}`` of every family's settings (``ServerConfig.sections``)."""
    names = {option.section for option in OPTIONS if option.section is not None}
    return {name: values(args, name) for name in sorted(names)}


def fields_of(to: Target | str) -> set[str]:
    """The fields the options of ``to`` fill (for the tests that keep the model complete)."""
    return {option.target_field for option in OPTIONS if option.destination == to}
