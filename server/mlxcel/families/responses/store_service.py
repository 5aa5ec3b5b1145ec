"""The Responses family's stores as a service of the app: opened by the family router's
lifespan (or on first use, where an app runs without its lifespan, as a bare test client does),
kept in the app's ``services.parts["responses"]``, purged of expired entries on a timer, and
closed at shutdown. Opening them marks the background responses a stopped process left
unfinished ``failed``; shutting down stops the background responses still generated first."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request

from ...api.offload import off_loop
from ...api.state import AppState, app_state
from ...config import ServerConfig
from .background import STOPPED, BackgroundResponses
from .response_store import (
    ResponseDatabase,
    StoredResponse,
    StoreTable,
    TableLimits,
    conversation_table,
    response_table,
)
from .running import RunningResponses
from .store_config import SECTION, StoreConfig
from .store_location import MEMORY

PART = SECTION
PURGE_INTERVAL_S = 30.0
log = logging.getLogger("mlxcel.responses")
_OPENING = threading.Lock()


@dataclass
class ResponsesStores:
    db: ResponseDatabase
    responses: StoreTable[StoredResponse]
    conversations: StoreTable[list[dict[str, Any]]]
    running: RunningResponses = field(default_factory=RunningResponses)
    background: BackgroundResponses = field(default_factory=BackgroundResponses)

    def close(self) -> None:
        self.db.close()


def make_stores(
    responses_max: int, responses_ttl: float, conversations_max: int, conversations_ttl: float,
    max_bytes: int = 256 * 1024 * 1024, path: str | None = MEMORY,
    clock: Callable[[], float] = time.time,
) -> ResponsesStores:
    """Both tables in one database bounded by ``max_bytes`` (``path`` None: the default
    file)."""
    db = ResponseDatabase(path, max_bytes, clock)
    return ResponsesStores(
        db, response_table(db, TableLimits(responses_max, responses_ttl)),
        conversation_table(db, TableLimits(conversations_max, conversations_ttl)))


def stores_for(config: ServerConfig) -> ResponsesStores:
    """The stores the server's settings describe (the family's section, ``StoreConfig``), with
    the background responses an earlier process left unfinished marked ``failed``."""
    store = StoreConfig.of(config)
    stores = make_stores(
        store.responses_store_max_entries, store.responses_store_ttl_secs,
        store.conversation_store_max_entries, store.conversation_store_ttl_secs,
        store.responses_store_max_bytes, store.store_path)
    failed = stores.responses.fail_unfinished(interrupted)
    if failed:
        log.warning("%d background response(s) left unfinished by an earlier process now "
                    "read failed", failed)
    return stores


def interrupted(stored: StoredResponse) -> StoredResponse:
    """A background response whose process stopped before it ended."""
    body = {**stored.body, "status": "failed",
            "error": {"code": "server_error", "message": STOPPED}}
    return StoredResponse(body, stored.history)


def stores_in(state: AppState) -> ResponsesStores:
    stores = state.services.parts.get(PART)
    if stores is None:
        with _OPENING:  # two first requests at once open one database
            stores = state.services.parts.get(PART)
            if stores is None:
                stores = state.services.parts[PART] = stores_for(state.config)
    assert isinstance(stores, ResponsesStores)
    return stores


def stores_of(request: Request) -> ResponsesStores:
    return stores_in(app_state(request))


async def _purge_forever(stores: ResponsesStores) -> None:
    while True:
        await asyncio.sleep(PURGE_INTERVAL_S)
        stores.background.purge()  # the event logs of background responses past their TTL
        try:
            await off_loop(stores.db.purge_expired)
        except Exception:  # a busy or full disk must not end the timer
            log.exception("purging expired stored responses failed")


@asynccontextmanager
async def store_lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Open the store at startup (a path it cannot use stops the server), purge it every
    ``PURGE_INTERVAL_S`` seconds, close it at shutdown."""
    state: AppState = app.state.mlxcel
    stores = await off_loop(stores_in, state)
    if stores.db.path == MEMORY:
        log.warning("Responses store in memory (--store-path :memory:): stored responses and "
                    "conversations are lost when the server stops.")
    else:
        log.info("Responses store: %s", stores.db.path)
    timer = asyncio.create_task(_purge_forever(stores))
    try:
        yield
    finally:
        await stores.background.stop()  # their ends are stored before the database closes
        timer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await timer
        state.services.parts.pop(PART, None)
        stores.close()
