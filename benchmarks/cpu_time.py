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


def tree_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid``, of its waited-for children, and of every
    descendant still running (a server's worker processes, such as mlxcel's decode lanes);
    raises ``OSError`` when ``pid`` cannot be read."""
    total = stat_cpu_s(f"/proc/{pid}/stat", children=True)
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        parents.setdefault(ppid, []).append(int(entry))
    pending = list(parents.get(pid, []))
    while pending:
        child = pending.pop()
        try:
            total += stat_cpu_s(f"/proc/{child}/stat", children=True)
        except (OSError, ValueError, IndexError):  # it ended meanwhile: counted by its parent
            continue
        pending.extend(parents.get(child, []))
    return total
