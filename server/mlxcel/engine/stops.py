"""Stop strings that may span token boundaries.

Text that could still be the start of a stop string is held back, so a stop string (or a part
of one) never reaches the client.
"""

from __future__ import annotations


class StopMatcher:
    """Feeds decoded text through; releases what can no longer be part of a stop string."""

    def __init__(self, stops: tuple[str, ...]) -> None:
        self._stops = tuple(s for s in stops if s)
        self._held = ""
        self.matched: str | None = None

    def feed(self, text: str) -> str:
        """Add text; return the part that is safe to release. Sets ``matched`` on a hit."""
        if self.matched is not None:
            return ""
        if not self._stops:
            return text
        buf = self._held + text
        first: tuple[int, str] | None = None
        for stop in self._stops:
            pos = buf.find(stop)
            if pos != -1 and (first is None or pos < first[0]):
                first = (pos, stop)
        if first is not None:
            self.matched = first[1]
            self._held = ""
            return buf[: first[0]]
        keep = self._longest_partial(buf)
        self._held = buf[len(buf) - keep :] if keep else ""
        return buf[: len(buf) - keep]

    def flush(self) -> str:
        """Release whatever is held once generation ends without a match."""
        held, self._held = self._held, ""
        return "" if self.matched is not None else held

    def _longest_partial(self, buf: str) -> int:
        best = 0
        for stop in self._stops:
            for n in range(min(len(stop) - 1, len(buf)), best, -1):
                if buf.endswith(stop[:n]):
                    best = n
                    break
        return best
