"""One model on a thread of its own, serving one request at a time (the audio and image
workers), started by its family router's lifespan and kept in the app's services while the app
runs.

Admission is decided on the event loop before any work is queued: with a request running and
``max_queue`` more waiting, the next one gets 503 ``server_busy`` at once. Each request has
``timeout_s`` from admission to its answer; past it the client gets 504 and a request that has
not started yet is dropped when its turn comes (one already running finishes on the worker,
its result discarded, since MLX work cannot be interrupted).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from fastapi import FastAPI, Request

from .errors import ServerBusy, WorkerTimeout

if TYPE_CHECKING:
    from .config import ServerConfig

M = TypeVar("M")
T = TypeVar("T")


class SingleWorker(Generic[M]):
    """``model`` lives on the worker thread: it is loaded there (MLX streams belong to the
    thread that made them, and lazily built arrays must be evaluated where they run) and every
    request runs there."""

    def __init__(self, model: M, executor: ThreadPoolExecutor, *, kind: str, timeout_flag: str,
                 max_queue: int, timeout_s: float) -> None:
        self.model = model
        self.kind = kind  # "audio", "image": named in the 503 and 504 messages
        self.timeout_flag = timeout_flag
        self.max_queue = max_queue
        self.timeout_s = timeout_s
        self._executor = executor
        self._admitted = 0
        self._lock = threading.Lock()

    @classmethod
    def start(cls, load: Callable[[], M], *, kind: str, timeout_flag: str, max_queue: int,
              timeout_s: float) -> SingleWorker[M]:
        executor = ThreadPoolExecutor(1, thread_name_prefix=f"mlxcel-{kind}")
        try:
            model = executor.submit(load).result()
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(model, executor, kind=kind, timeout_flag=timeout_flag, max_queue=max_queue,
                   timeout_s=timeout_s)

    @property
    def queue_depth(self) -> int:
        """Requests admitted and not yet answered by the worker (running + waiting)."""
        return self._admitted

    async def run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self._admitted >= 1 + self.max_queue:
                raise ServerBusy(
                    f"The {self.kind} queue is full ({self.max_queue} waiting behind the running "
                    "request). Please try again later.")
            self._admitted += 1
        deadline = time.monotonic() + self.timeout_s
        expired = WorkerTimeout(f"The {self.kind} request did not finish within "
                                f"{self.timeout_s:g} s ({self.timeout_flag}).")

        def job() -> T:
            try:
                if time.monotonic() >= deadline:
                    raise expired  # its client has had (or is getting) the 504
                return fn()
            finally:
                with self._lock:
                    self._admitted -= 1

        future = asyncio.get_running_loop().run_in_executor(self._executor, job)
        try:
            return await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
        except asyncio.TimeoutError:
            future.add_done_callback(_consume)
            raise expired from None

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)


def worker_lifespan(
    part: str, start: Callable[[ServerConfig], SingleWorker[M] | None],
    loaded: Callable[[M], None],
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """A router lifespan for one family's worker: ``start(config)`` loads it at startup (None
    where the server was not started with its model: nothing runs; a failed load raises, which
    stops the server), ``loaded(model)`` announces it, and it is kept in the app's
    ``services.parts[part]`` (read back with ``app_worker``) until shutdown closes it."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        parts = app.state.mlxcel.services.parts
        worker = start(app.state.mlxcel.config)
        if worker is None:
            yield
            return
        loaded(worker.model)
        parts[part] = worker
        try:
            yield
        finally:
            parts.pop(part, None)
            worker.close()

    return lifespan


def app_worker(request: Request, part: str) -> SingleWorker[Any] | None:
    """The worker ``worker_lifespan`` keeps in ``services.parts[part]``; None without one."""
    worker: SingleWorker[Any] | None = request.app.state.mlxcel.services.parts.get(part)
    return worker


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve the late result or error so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()
