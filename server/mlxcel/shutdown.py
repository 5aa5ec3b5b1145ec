"""A bounded shutdown: uvicorn's ``Server`` with a grace period after the first SIGTERM (or
Ctrl-C).

uvicorn on its own stops accepting at the first signal, then waits for every connection to
finish, however long its stream runs (``timeout_graceful_shutdown`` would then cancel the
route's task, cutting streams off without their final event), and re-raises the signal once
done, so the process dies of it rather than exiting 0. Here the first signal:

1. closes admission: each new request, on a kept-alive or a new connection, is 503 in its
   family's error shape (api/guard.py), and the listening socket stays open meanwhile, so a
   client learns why rather than meeting a refused connection;
2. lets running requests finish for at most ``--shutdown-grace`` seconds;
3. then cancels what the engine still runs: each stream ends with its family's final event
   for a cancelled generation (a ``finish_reason``, Responses' ``response.incomplete``),
   and the OpenAI and llama.cpp streams then with an error event saying why
   (api/engine_stream.py ``server_stop_error``);
4. then lets uvicorn shut down: connections close, the app's lifespan shutdown runs (the
   engine stops, stores are flushed), and the process exits 0.

A second signal exits at once, as uvicorn's does.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import time
from types import FrameType

import uvicorn

from .api.guard import Admission
from .engine.worker import Engine

log = logging.getLogger("mlxcel.shutdown")

# After the grace period: how long cancelled streams get to write their final event before
# uvicorn cuts what remains.
FINAL_EVENTS_S = 3.0
POLL_S = 0.05
STOPPED = "The server is shutting down: the generation was stopped (--shutdown-grace)."


class GracefulServer(uvicorn.Server):
    """``uvicorn.Server`` whose first signal drains for at most ``grace_s`` seconds."""

    def __init__(self, config: uvicorn.Config, engine: Engine, admission: Admission,
                 grace_s: float) -> None:
        config.timeout_graceful_shutdown = int(FINAL_EVENTS_S)
        super().__init__(config)
        self.engine = engine
        self.admission = admission
        self.grace_s = grace_s
        self._loop: asyncio.AbstractEventLoop | None = None
        self._drain: asyncio.Task[None] | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.admission.closed or self._loop is None or sig not in (signal.SIGTERM,
                                                                         signal.SIGINT):
            self.should_exit = self.force_exit = True  # a second signal: no more waiting
            return
        # Not recorded in _captured_signals: uvicorn would re-raise it after the shutdown,
        # and the process would die of the signal instead of exiting 0.
        self.admission.close()
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        self._drain = asyncio.ensure_future(self.drain())

    async def drain(self) -> None:
        """Wait for running requests up to the grace period, cancel the rest, then exit."""
        log.info("shutting down: new requests get 503; %d running get up to %g s "
                 "(--shutdown-grace)", self.engine.unfinished, self.grace_s)
        deadline = time.monotonic() + self.grace_s
        while self._busy() and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
        cancelled = self.engine.cancel_all(STOPPED)
        if cancelled:
            log.warning("shutdown grace period over: %d unfinished requests cancelled",
                        cancelled)
            end = time.monotonic() + FINAL_EVENTS_S
            while self.engine.unfinished and time.monotonic() < end:
                await asyncio.sleep(POLL_S)
        self.should_exit = True

    def _busy(self) -> bool:
        """Requests still being answered (this drain runs in a task of its own, not theirs)."""
        return self.engine.unfinished > 0 or any(
            not task.done() for task in self.server_state.tasks)
