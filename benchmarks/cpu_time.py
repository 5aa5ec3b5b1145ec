"""CPU seconds from Linux ``/proc``: a process's or a thread's ``stat`` line."""

from __future__ import annotations

import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def stat_cpu_s(path: str, children: bool = False) -> float:
    """User + system CPU seconds in the ``stat`` file at ``path`` (``/proc/PID/stat`` or
    ``/proc/self/task/TID/stat``), with its waited-for children's when ``children``; raises
    ``OSError`` when it cannot be read."""
    with open(path, encoding="ascii", errors="replace") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15 if children else 13]) / CLOCK_TICKS
