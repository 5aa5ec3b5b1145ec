"""Giving memory back after large requests.

A 24 MiB body is parsed, copied and dropped in a worker thread; glibc's allocator keeps the
freed pages of its heaps (one per thread) for reuse, so the process's resident memory stays
~20% above where it was, request after request. After a request that carried a large body the
server asks glibc to return free pages (``malloc_trim``), at most once per interval, from a
worker thread (the call runs without the interpreter lock). Elsewhere than glibc it does
nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
from collections.abc import Callable

import anyio.to_thread

# Bodies at least this large leave enough freed pages behind to be worth a trim.
TRIM_AFTER_BYTES = 1024 * 1024
TRIM_INTERVAL_S = 2.0

_pending = False


def note_body(size: int) -> None:
    """Record that a body of ``size`` bytes was read (a trim follows a large one)."""
    if size >= TRIM_AFTER_BYTES:
        request_trim()


def request_trim() -> None:
    """Ask for a trim at the next interval (e.g. after the prompt cache was emptied)."""
    global _pending
    _pending = True


def _malloc_trim() -> Callable[[], object] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl)
        return None
    return lambda: trim(0)


async def trim_after_large_bodies(interval_s: float = TRIM_INTERVAL_S) -> None:
    """Run for the server's life: trim once per interval when a large body was read."""
    global _pending
    trim = _malloc_trim()
    if trim is None:
        return
    while True:
        await asyncio.sleep(interval_s)
        if _pending:
            _pending = False
            with contextlib.suppress(OSError):
                await anyio.to_thread.run_sync(trim)
