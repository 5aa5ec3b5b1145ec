"""OpenAI Responses: ``/v1/responses`` (create, retrieve, delete, cancel), its ``input_tokens``
count and ``/v1/responses/compact``, with the stored-response chain."""

from __future__ import annotations

from .. import Family
from . import compact_routes, routes
from .store_config import SECTION, StoreConfig

FAMILY = Family(routers=(routes.router, compact_routes.router),
                settings={SECTION: StoreConfig})
