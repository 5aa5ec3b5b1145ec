"""The Responses family's settings: where its store lives and how much it keeps (``--store-path``,
``--responses-store-*``, ``--conversation-store-*``, ``--store-bytes``), its section of
``ServerConfig.sections``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ...config import ServerConfig, section
from ...settings.catalog import default_of

SECTION = "responses"


def _d(field: str) -> Any:
    return default_of(SECTION, field)


@dataclass(frozen=True)
class StoreConfig:
    """0 entries disables a table; ``store_path`` None: the user's data directory."""

    store_path: str | None = _d("store_path")
    responses_store_max_entries: int = _d("responses_store_max_entries")
    responses_store_ttl_secs: int = _d("responses_store_ttl_secs")
    conversation_store_max_entries: int = _d("conversation_store_max_entries")
    conversation_store_ttl_secs: int = _d("conversation_store_ttl_secs")
    # Bytes the store may hold, as stored (least recently used evicted first).
    responses_store_max_bytes: int = _d("responses_store_max_bytes")

    @classmethod
    def of(cls, config: ServerConfig) -> StoreConfig:
        return section(config, SECTION, cls)
