"""The one error a GGUF file that cannot be served raises: its message is a single line that names
what is unsupported (an architecture, a tensor type, a missing tensor, a file that is no GGUF), so
startup can print it as it is and exit."""

from __future__ import annotations

from ...startup import StartupError


class UnsupportedGGUF(StartupError, ValueError):
    """This GGUF file cannot be loaded; ``str(error)`` is one line naming the reason. A
    ``StartupError``: ``mlxcel-server`` prints it as its one startup line and exits 2."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = " ".join(reason.split())  # one line, whatever the cause's text holds
        super().__init__(f"{path}: {self.reason}")
