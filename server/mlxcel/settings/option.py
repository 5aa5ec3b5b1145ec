"""One server setting, declared once: its flags, environment variables, type, default, help text
and group, and where its value goes (a field of ``ServerConfig``, ``EngineConfig``,
``RequestLimits``, ``GenerationDefaults``, the media policy, or a family's own section of
``ServerConfig.sections``, which that family reads into its config dataclass).

argparse (``settings/parser.py``), ``--help``, ``docs/configuration.md`` (``settings/docs.py``)
and the config objects (``settings/derive.py``) are all made from these declarations.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

T = TypeVar("T")
Kind = Literal["value", "bool", "append"]
Target = Literal["server", "engine", "limits", "defaults", "media", "cli", "family"]

TRUE_WORDS = frozenset({"1", "true", "on", "yes", "enabled"})
FALSE_WORDS = frozenset({"0", "false", "off", "no", "disabled"})


class SettingError(ValueError):
    """An environment variable whose value the setting cannot take."""


def env_bool(name: str, value: str) -> bool:
    """The one reading of a boolean environment variable (llama-server's words, and yes/no)."""
    word = value.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise SettingError(f"{name}={value!r}: expected one of "
                       f"{', '.join(sorted(TRUE_WORDS | FALSE_WORDS))}")


def comma_list(value: str) -> tuple[str, ...]:
    """``a, b,,c`` -> ``("a", "b", "c")``."""
    return tuple(v.strip() for v in value.split(",") if v.strip())


class BadFilePath(argparse.ArgumentTypeError, ValueError):
    """A file setting naming a directory: argparse shows the message, an environment variable
    is a ``SettingError``."""


def file_path(value: str) -> str:
    """A file the server may create or open (``:memory:`` is SQLite's name for none): checked
    when the setting is read, so that a directory is refused before the server starts."""
    if value != ":memory:" and Path(value).expanduser().is_dir():
        raise BadFilePath(f"{value!r} is a directory; name a file in it")
    return value


@dataclass(frozen=True)
class Option(Generic[T]):
    """A setting. ``flags`` are its command-line names (empty: environment only); a ``bool``
    option may also have ``off_flags`` (``--no-slots``). ``env`` lists the variables read when no
    flag is given, first set wins; ``env_inverted`` means a true variable turns the setting off
    (``LLAMA_ARG_NO_CACHE_PROMPT``). ``to`` names where the value goes (``"family"``: the
    section ``section`` of ``ServerConfig.sections``, keyed by the family's package name),
    ``field`` the attribute there (default: ``dest``); ``minimum`` clamps the value given."""

    dest: str
    default: T
    help: str
    group: str
    flags: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    kind: Kind = "value"
    type: Callable[[str], Any] = str
    choices: tuple[str, ...] | None = None
    off_flags: tuple[str, ...] = ()
    env_inverted: bool = False
    to: Target = "server"
    field: str | None = None
    minimum: float | None = None
    shown_default: str | None = None
    section: str | None = None

    def __post_init__(self) -> None:
        if (self.to == "family") != (self.section is not None):
            raise ValueError(f"{self.dest}: a family setting, and only one, names its section")

    @property
    def destination(self) -> str:
        """What ``settings.catalog.default_of`` and ``settings.derive.values`` call its place:
        ``to``, or a family setting's section."""
        return self.section or self.to

    @property
    def target_field(self) -> str:
        return self.field or self.dest

    @property
    def all_flags(self) -> tuple[str, ...]:
        return self.flags + self.off_flags

    def default_text(self) -> str:
        """The default as ``--help`` and the docs state it."""
        if self.shown_default is not None:
            return self.shown_default
        if self.kind == "bool":
            return "on" if self.default else "off"
        if self.default is None or self.default in ((), []):
            return "none"
        return str(self.default)

    def from_env(self, environ: Mapping[str, str]) -> tuple[str, Any] | None:
        """``(variable, value)`` from the first of ``env`` that is set and not empty."""
        for name in self.env:
            raw = environ.get(name, "")
            if raw.strip():
                return name, self.parse_env(name, raw)
        return None

    def parse_env(self, name: str, raw: str) -> Any:
        if self.kind == "bool":
            return env_bool(name, raw) != self.env_inverted
        if self.kind == "append":
            return list(comma_list(raw))
        try:
            value = self.type(raw.strip())
        except ValueError as exc:
            raise SettingError(f"{name}={raw!r}: {exc}") from None
        if self.choices is not None and value not in self.choices:
            raise SettingError(f"{name}={raw!r}: expected one of {', '.join(self.choices)}")
        return value

    def clamp(self, value: Any) -> Any:
        if self.minimum is None or value is None:
            return value
        return max(type(value)(self.minimum), value)
