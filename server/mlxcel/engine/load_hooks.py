"""What runs on a model once it has loaded and before any request can use it (``--chat-template``
installed for every route: ``Engine.when_loaded``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from .loaded_model import LoadedModel

Hook = Callable[[LoadedModel], None]


class LoadHooks:
    """Hooks registered before the load run once it ends; one registered after runs at once."""

    def __init__(self) -> None:
        self._pending: list[Hook] | None = []  # None: the load has run them
        self._lock = threading.Lock()

    def add(self, hook: Hook, model: LoadedModel | None) -> None:
        with self._lock:
            if self._pending is not None:
                self._pending.append(hook)
                return
        if model is not None:
            hook(model)

    def run(self, model: LoadedModel) -> None:
        with self._lock:
            for hook in self._pending or ():
                hook(model)
            self._pending = None
