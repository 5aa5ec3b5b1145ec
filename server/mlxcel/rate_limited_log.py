"""A log line that a flood of clients cannot multiply: the first occurrence in an interval is
logged, the rest are counted and the count goes with the next line logged."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable


class RateLimitedLog:
    """One ``logger`` line per ``interval_s`` at most, saying how many were left out."""

    def __init__(self, logger: logging.Logger, interval_s: float = 10.0,
                 level: int = logging.INFO,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._logger = logger
        self._interval_s = interval_s
        self._level = level
        self._clock = clock
        self._lock = threading.Lock()
        self._last: float | None = None
        self.suppressed = 0

    def __call__(self, message: str) -> bool:
        """Log ``message`` unless one was logged within the interval; whether it was."""
        with self._lock:
            now = self._clock()
            if self._last is not None and now - self._last < self._interval_s:
                self.suppressed += 1
                return False
            left_out, self.suppressed, self._last = self.suppressed, 0, now
        suffix = f" ({left_out} more in the last {self._interval_s:g} s)" if left_out else ""
        self._logger.log(self._level, "%s%s", message, suffix)
        return True
