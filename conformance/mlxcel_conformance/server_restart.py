"""Restarting the server under test hard, for the checks of what must survive a crash: SIGKILL
(no shutdown hook runs, nothing is flushed), then the same command on the same port.

Possible in two cases only, so that the suite never kills a process it cannot bring back:
- the suite started the server itself (``ReferenceServer.restart_hard``);
- ``--server-pid`` names a local process whose command line, working directory and environment
  ``/proc`` shows (Linux): it is relaunched with them, in its own session, and left running in
  place of the one killed (its output goes to a log file named in the report).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .errors import SetupError
from .target import wait_healthy

Restart = Callable[[], int]  # kills and relaunches the server; the new process id


@dataclass(frozen=True)
class Relaunch:
    """What starts the same server again."""

    argv: list[str]
    cwd: str
    env: dict[str, str]


def relaunch_of(pid: int) -> Relaunch | None:
    """The command that started ``pid``, from ``/proc`` (None where it cannot be read)."""
    proc = Path(f"/proc/{pid}")
    try:
        argv = [a.decode(errors="surrogateescape")
                for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
        cwd = os.readlink(proc / "cwd")
        pairs = (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return None
    env = dict(p.decode(errors="surrogateescape").split("=", 1) for p in pairs if b"=" in p)
    return Relaunch(argv, cwd, env) if argv else None


def _wait_gone(pid: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    raise SetupError(f"process {pid} did not exit within {timeout:.0f} s of SIGKILL")


def pid_restart(base_url: str, pid: int, startup_timeout: float = 120.0) -> Restart | None:
    """A hard restart of the ``--server-pid`` process (None where ``/proc`` shows no command)."""
    relaunch = relaunch_of(pid)
    if relaunch is None:
        return None
    current = [pid]

    def restart() -> int:
        os.kill(current[0], signal.SIGKILL)
        _wait_gone(current[0], 10.0)
        fd, name = tempfile.mkstemp(prefix="mlxcel-restarted-server-", suffix=".log")
        with os.fdopen(fd, "wb") as log:
            process = subprocess.Popen(relaunch.argv, cwd=relaunch.cwd, env=relaunch.env,
                                       stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        current[0] = process.pid

        def tail() -> str:
            return Path(name).read_text(errors="replace")[-3000:]

        if not wait_healthy(base_url, process, startup_timeout, "restarted server", tail):
            raise SetupError(f"the restarted server (log {name}) was not healthy within "
                             f"{startup_timeout:.0f} s")
        return process.pid

    return restart
