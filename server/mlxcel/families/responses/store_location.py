"""Where the Responses store lives: ``--store-path``, else a file in the user's data directory
(``$XDG_DATA_HOME/mlxcel/`` else ``~/.local/share/mlxcel/``, as the XDG Base Directory
Specification places user data, https://specifications.freedesktop.org/basedir-spec/latest/,
"Environment variables"; ``~/Library/Application Support/mlxcel/`` on macOS), or ``:memory:``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MEMORY = ":memory:"
FILE_NAME = "responses.sqlite3"


class StorePathError(ValueError):
    """A ``--store-path`` the store cannot use (a directory, a folder that cannot be made)."""


def default_store_path() -> Path:
    """The store file in the user's data directory."""
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    if xdg and Path(xdg).is_absolute():  # the specification ignores a relative value
        base = Path(xdg)
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    else:
        base = Path.home() / ".local" / "share"
    return base / "mlxcel" / FILE_NAME


def prepare_path(path: str | None) -> str:
    """The database path to open (its folder made, private to the user), or ``:memory:``."""
    if path == MEMORY:
        return MEMORY
    target = Path(path).expanduser() if path else default_store_path()
    if target.is_dir():
        raise StorePathError(f"--store-path {str(target)!r} is a directory; name a file in it, "
                             f"e.g. {str(target / FILE_NAME)!r}.")
    try:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise StorePathError(f"--store-path {str(target)!r}: cannot make its folder "
                             f"({exc.strerror or exc}).") from None
    return str(target)
