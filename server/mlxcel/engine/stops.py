"""Stop strings that may span token boundaries.

Text that could still be the start of a stop string is held back, so a stop string (or a part
of one) never reaches the client.
"""

from __future__ import annotations

from ..generation.holdback import held_suffix


class StopMatcher:
    """Feeds decoded text through; releases what can no longer be part of a stop string."""

    def __init__(self, stops: tuple[str, ...]) -> None:
        self._stops = tuple(s for s in stops if s)
        # a text can end in the start of a stop string only if it ends in one of these
        self._prefix_chars = frozenset("".join(s[:-1] for s in self._stops))
        self._held = ""
        self.matched: str | None = None

    def feed(self, text: str) -> str:
        """Add text; return the part that is safe to release. Sets ``matched`` on a hit."""
        if self.matched is not None:
            return ""
        if not self._stops:
            return text
        buf = self._held + text
        first = self._first_complete(buf)
        if first is not None:
            self.matched = first[1]
            self._held = ""
            return buf[: first[0]]
        keep = held_suffix(buf, self._stops) if buf[-1:] in self._prefix_chars else 0
        self._held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep]

    def flush(self) -> str:
        """Release whatever is held once generation ends without a match."""
        held, self._held = self._held, ""
        return "" if self.matched is not None else held

    def _first_complete(self, buf: str) -> tuple[int, str] | None:
        """The occurrence that ends first (of those ending together, the longest).

        Generation halts as soon as any stop string is complete, so a stop that starts earlier
        but ends later is never seen; choosing by end keeps the result independent of how the
        text was split into chunks.
        """
        best: tuple[int, int, str] | None = None
        for stop in self._stops:
            pos = buf.find(stop)
            if pos != -1 and (best is None or (pos + len(stop), pos) < best[:2]):
                best = (pos + len(stop), pos, stop)
        return None if best is None else (best[1], best[2])
