"""The audio worker: one Whisper model, one request at a time on a thread of its own.

Admission is decided on the event loop before any work is queued: with a request running and
``max_queue`` more waiting, the next one gets 503 ``server_busy`` at once. Each request has
``timeout_s`` from admission to its answer; past it the client gets 504 and a request that has
not started yet is dropped when its turn comes (one already running finishes on the worker,
its result discarded, since MLX work cannot be interrupted).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from fastapi import Request

from ..errors import ServerBusy, WorkerTimeout
from .whisper import WhisperModel, load_whisper

log = logging.getLogger("mlxcel.audio")
T = TypeVar("T")
DEFAULT_MAX_QUEUE = 4
DEFAULT_TIMEOUT_S = 300.0


@dataclass
class AudioService:
    whisper: WhisperModel
    max_queue: int = DEFAULT_MAX_QUEUE
    timeout_s: float = DEFAULT_TIMEOUT_S
    _executor: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(1, thread_name_prefix="mlxcel-audio"))
    _admitted: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, path_or_repo: str, *, max_queue: int, timeout_s: float) -> AudioService:
        """Load the model on the worker thread itself: MLX streams belong to the thread that
        made them, and the model's lazily built arrays must be evaluated where they run."""
        executor = ThreadPoolExecutor(1, thread_name_prefix="mlxcel-audio")
        try:
            whisper = executor.submit(load_whisper, path_or_repo).result()
        except BaseException:
            executor.shutdown(wait=False)
            raise
        return cls(whisper, max_queue=max_queue, timeout_s=timeout_s, _executor=executor)

    @property
    def queue_depth(self) -> int:
        """Requests admitted and not yet answered by the worker (running + waiting)."""
        return self._admitted

    async def run(self, fn: Callable[[], T]) -> T:
        with self._lock:
            if self._admitted >= 1 + self.max_queue:
                raise ServerBusy(
                    f"The audio queue is full ({self.max_queue} waiting behind the running "
                    "request). Please try again later.")
            self._admitted += 1
        deadline = time.monotonic() + self.timeout_s
        expired = WorkerTimeout(f"The audio request did not finish within {self.timeout_s:g} s "
                                "(--audio-timeout).")

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


def _consume(future: asyncio.Future[Any]) -> None:
    """Retrieve the late result or error so asyncio does not log it as never retrieved."""
    if not future.cancelled():
        future.exception()


def audio_service(request: Request) -> AudioService | None:
    service: AudioService | None = getattr(request.app.state, "mlxcel_audio", None)
    return service
