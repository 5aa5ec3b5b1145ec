"""The config objects from parsed settings: each option's value goes to the field its
declaration names (``Option.to`` and ``Option.field``), clamped to its ``minimum``."""

from __future__ import annotations

import argparse
from typing import Any

from .catalog import OPTIONS
from .option import Target


def values(args: argparse.Namespace, to: Target) -> dict[str, Any]:
    """``{field: value}`` of every option whose value goes to ``to``; an empty string given
    for a setting whose default is unset counts as unset."""
    found = {}
    for option in OPTIONS:
        if option.to != to:
            continue
        value = getattr(args, option.dest)
        if option.default is None and value == "":
            value = None
        found[option.target_field] = option.clamp(value)
    return found


def fields_of(to: Target) -> set[str]:
    """The fields the options of ``to`` fill (for the tests that keep the model complete)."""
    return {option.target_field for option in OPTIONS if option.to == to}
