"""The responses this process is generating right now, with the way to stop each: they are
stored only when they end (``response_store.py``), so a crash never leaves one ``in_progress``
in the database, and GET and cancel find them here meanwhile."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Running:
    body: dict[str, Any]  # the response as announced (``in_progress``)
    cancel: Callable[[], None]
    deleted: bool = False  # DELETE while it ran: its end stores nothing


class RunningResponses:
    """Thread-safe: routes read it on the loop, store writes finish off it."""

    def __init__(self) -> None:
        self._items: dict[str, Running] = {}
        self._lock = threading.Lock()

    def start(self, response_id: str, body: dict[str, Any], cancel: Callable[[], None]) -> None:
        """Hold the response (a background one is held by its route first: kept as is)."""
        with self._lock:
            self._items.setdefault(response_id, Running(body, cancel))

    def update(self, response_id: str, body: dict[str, Any]) -> None:
        """The response as it now reads (a background one: ``queued``, then ``in_progress``),
        unless a cancel already marked it."""
        with self._lock:
            running = self._items.get(response_id)
            if running is not None and running.body.get("status") != "cancelled":
                running.body = body

    def get(self, response_id: str) -> dict[str, Any] | None:
        with self._lock:
            running = self._items.get(response_id)
            return None if running is None else running.body

    def cancel(self, response_id: str) -> dict[str, Any] | None:
        """Stop the generation; the body now reads ``cancelled`` (the stream stores the final
        one, with what was generated, as it ends)."""
        with self._lock:
            running = self._items.get(response_id)
            if running is None:
                return None
            running.body = {**running.body, "status": "cancelled"}
        running.cancel()
        return running.body

    def delete(self, response_id: str) -> bool:
        """Stop the generation and keep its end from storing it; False if not running."""
        with self._lock:
            running = self._items.get(response_id)
            if running is None:
                return False
            running.deleted = True
        running.cancel()
        return True

    def deleted(self, response_id: str) -> bool:
        with self._lock:
            running = self._items.get(response_id)
            return running is not None and running.deleted

    def end(self, response_id: str) -> None:
        with self._lock:
            self._items.pop(response_id, None)
