"""Per-request LoRA adapters (mlx-lm's ``adapters`` field): the base model loaded again with
the adapter applied (``mlx_lm.load(..., adapter_path=...)``), cached by directory so each is
loaded once. An adapted model has its own weights, so its requests decode on the
single-sequence lane, never inside the base model's batch, and outside the prompt cache.
The directory was already confined to ``--adapter-dir`` by the route.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

import mlx.nn as nn

from .handle import RequestHandle

log = logging.getLogger("mlxcel.engine")

# Adapted copies kept in memory (least recently used dropped first).
MAX_CACHED_ADAPTERS = 4


def needs_solo_lane(handle: RequestHandle) -> bool:
    return handle.request.adapter is not None


class AdapterModels:
    def __init__(self, base: str, capacity: int = MAX_CACHED_ADAPTERS) -> None:
        self.base = base
        self.capacity = max(1, capacity)
        self._models: OrderedDict[str, nn.Module] = OrderedDict()
        self.loads = 0

    def get(self, adapter: str) -> nn.Module:
        """The base model with ``adapter`` applied; loaded on first use (engine thread)."""
        model = self._models.get(adapter)
        if model is not None:
            self._models.move_to_end(adapter)
            return model
        from mlx_lm import load

        model = load(self.base, adapter_path=adapter)[0]
        self.loads += 1
        log.info("loaded LoRA adapter %s on %s", adapter, self.base)
        self._models[adapter] = model
        while len(self._models) > self.capacity:
            self._models.popitem(last=False)
        return model
