"""Giving memory back after large requests.

A 24 MiB body is parsed, copied and dropped in a worker thread; glibc's allocator keeps the
freed pages of its heaps (one per thread) for reuse, so the process's resident memory stays
~20% above where it was, request after request. Once large bodies stop coming (none for an
interval) the server asks glibc to return free pages (``malloc_trim``), from a worker thread
(the call runs without the interpreter lock). Not sooner: while they keep coming the next
parse reuses those pages, where pages just handed back must be faulted in again, with the
interpreter lock held (measured: ``json.loads`` of a 24 MiB body 11-17 ms on reused pages,
37-130 ms on fresh ones, and ``/health`` waiting as long). Elsewhere than glibc it does
nothing. At startup it also caps glibc's number of heaps (``limit_malloc_arenas``) and keeps
what large requests free in those heaps rather than handing it back block by block
(``keep_freed_memory``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import os
import time
from collections.abc import Callable
from typing import Any

import anyio.to_thread

# Bodies at least this large leave enough freed pages behind to be worth a trim.
TRIM_AFTER_BYTES = 1024 * 1024
TRIM_INTERVAL_S = 2.0

_pending = False
_last_large_body = 0.0  # time.monotonic() when the last large body was read


def note_body(size: int) -> None:
    """Record that a body of ``size`` bytes was read (a trim follows a large one, once no
    other has come for an interval)."""
    global _last_large_body
    if size >= TRIM_AFTER_BYTES:
        _last_large_body = time.monotonic()
        request_trim()


def request_trim() -> None:
    """Ask for a trim at the next interval (e.g. after the prompt cache was emptied)."""
    global _pending
    _pending = True


def _libc_function(name: str) -> Any:
    """A glibc function, or None elsewhere (macOS, musl)."""
    path = ctypes.util.find_library("c")
    if path is None:
        return None
    try:
        return getattr(ctypes.CDLL(path), name)
    except (OSError, AttributeError):
        return None


def _malloc_trim() -> Callable[[], object] | None:
    trim = _libc_function("malloc_trim")
    return None if trim is None else (lambda: trim(0))


# glibc's mallopt parameters: the number of heaps ("arenas"), the size from which a block is
# mapped on its own, and the free memory at a heap's top that free() hands back by itself.
M_ARENA_MAX = -8
M_MMAP_THRESHOLD = -3
M_TRIM_THRESHOLD = -1
ARENAS = 2
# The largest threshold glibc accepts (half its 64 MiB heap on 64-bit): a 24 MiB body, its text
# and the strings parsed from it come from the heaps, not from mappings of their own.
MMAP_THRESHOLD = 32 * 1024 * 1024
# Free memory kept at a heap's top until the server trims (trim_after_large_bodies).
TRIM_THRESHOLD = 512 * 1024 * 1024


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Let glibc keep at most ``arenas`` heaps (it makes up to eight per core, one for each
    thread that contends): each keeps freed pages of its own, and request preparation runs on
    several threads. Measured: resident memory after a hostile run 13% above its start with
    glibc's default, 2% with two arenas. ``MALLOC_ARENA_MAX`` in the environment wins. Call
    before threads start; True when applied."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    mallopt = _libc_function("mallopt")
    return bool(mallopt is not None and mallopt(M_ARENA_MAX, arenas))


def keep_freed_memory() -> list[str]:
    """Make glibc keep the memory large requests free for the next ones, until the server
    trims once they stop (``trim_after_large_bodies``). By default a block over a threshold that
    moves with use (128 KiB to 32 MiB) is mapped and unmapped on its own, and free() hands a
    heap's top back past twice that threshold: a 24 MiB body's memory went back to the system
    and was faulted in again for the next one, with the interpreter lock held (on a VM that backs
    memory on first touch, up to ~10 ms per MiB: /health waited 140-180 ms). Settings the
    environment makes (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) win. Call before
    threads start; the names of the settings applied."""
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return []
    applied = []
    for variable, parameter, value in (
            ("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, MMAP_THRESHOLD),
            ("MALLOC_TRIM_THRESHOLD_", M_TRIM_THRESHOLD, TRIM_THRESHOLD)):
        if not os.environ.get(variable) and mallopt(parameter, value):
            applied.append(variable)
    return applied


async def trim_after_large_bodies(interval_s: float = TRIM_INTERVAL_S) -> None:
    """Run for the server's life: trim when a large body was read and none for an interval."""
    global _pending
    trim = _malloc_trim()
    if trim is None:
        return
    while True:
        await asyncio.sleep(interval_s)
        if _pending and time.monotonic() - _last_large_body >= interval_s:
            _pending = False
            with contextlib.suppress(OSError):
                await anyio.to_thread.run_sync(trim)
