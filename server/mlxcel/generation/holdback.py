"""The one hold-back rule for streamed text: a suffix that could still grow into a marker (a
stop string, a reasoning tag, a tool-call opener) is kept until it cannot."""

from __future__ import annotations

from collections.abc import Iterable


def held_suffix(text: str, markers: Iterable[str]) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of some marker."""
    best = 0
    for marker in markers:
        for n in range(min(len(marker) - 1, len(text)), best, -1):
            if text.endswith(marker[:n]):
                best = n
                break
    return best


def earliest(text: str, markers: Iterable[str]) -> tuple[int, str] | None:
    """The first marker found in ``text`` and where (of two at one place, the one listed first)."""
    found: tuple[int, str] | None = None
    for marker in markers:
        at = text.find(marker)
        if at >= 0 and (found is None or at < found[0]):
            found = (at, marker)
    return found
