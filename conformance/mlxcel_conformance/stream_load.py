"""Many chat streams sent at once, each one's ending recorded as a `StreamOutcome`.

Two shapes of load, both bounded by one deadline for the whole run:
- `streams_on_own_connections`: every stream opens its own TCP connection, all released
  together by a barrier (a burst of connects is what overflows a small listen backlog);
- `streams_over_keepalive_pool`: the streams share a few persistent HTTP/1.1 connections, each
  reused for several requests in a row (what a pooling client such as the OpenAI SDK does).

What happened before the response headers (refused, reset, closed: `dropped`) is told apart
from what happened after them (`truncated`); everything read whole goes to
`classify_chat_stream`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

import httpx

from .checks.concurrency import StreamOutcome, classify_chat_stream
from .flows import CHAT_PATH
from .target import Target

# Headroom past the deadline for worker threads to notice it before a future is abandoned.
_GRACE_S = 5.0


def _timeout(deadline: float) -> httpx.Timeout:
    return httpx.Timeout(max(0.1, deadline - time.monotonic()))


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def send_one_stream(http: httpx.Client, payload: dict[str, Any],
                    deadline: float) -> StreamOutcome:
    """POST one chat stream on `http` and read it to its end or the deadline."""
    headers_seen = False
    try:
        with http.stream("POST", CHAT_PATH, json=payload, timeout=_timeout(deadline)) as response:
            headers_seen = True
            pieces = []
            for piece in response.iter_bytes():
                pieces.append(piece)
                if time.monotonic() > deadline:
                    return StreamOutcome("timeout", response.status_code,
                                         "the stream was still open at the run's deadline")
            text = b"".join(pieces).decode("utf-8", errors="replace")
            content_type = response.headers.get("content-type", "")
            return classify_chat_stream(response.status_code, content_type, text)
    except httpx.TimeoutException as exc:
        return StreamOutcome("timeout", None, _describe(exc))
    except httpx.TransportError as exc:
        return StreamOutcome("truncated" if headers_seen else "dropped", None, _describe(exc))


def _collect(futures: list[Future[list[StreamOutcome]]], per_future: int,
             deadline: float) -> list[StreamOutcome]:
    done, _ = wait(futures, timeout=max(0.0, deadline - time.monotonic()) + _GRACE_S)
    outcomes: list[StreamOutcome] = []
    for future in futures:
        if future in done:
            outcomes.extend(future.result())
        else:
            outcomes.extend([StreamOutcome("timeout", None, "no answer by the run's deadline")]
                            * per_future)
    return outcomes


def _run_workers(workers: int, per_worker: int, work: Callable[[], list[StreamOutcome]],
                 deadline: float) -> list[StreamOutcome]:
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stream-load")
    try:
        futures = [pool.submit(work) for _ in range(workers)]
        return _collect(futures, per_worker, deadline)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def streams_on_own_connections(target: Target, payload: dict[str, Any], n: int,
                               budget_s: float) -> list[StreamOutcome]:
    """`n` streams, each on a fresh connection, all sent at the same moment."""
    deadline = time.monotonic() + budget_s
    barrier = threading.Barrier(n)

    def one() -> list[StreamOutcome]:
        with httpx.Client(base_url=target.base_url, headers=target.auth_headers) as http:
            try:
                barrier.wait(timeout=max(0.1, deadline - time.monotonic()))
            except threading.BrokenBarrierError:
                pass  # a slow thread start: send anyway, late rather than never
            return [send_one_stream(http, payload, deadline)]

    return _run_workers(n, 1, one, deadline)


def streams_over_keepalive_pool(target: Target, payload: dict[str, Any], n: int,
                                connections: int, budget_s: float) -> list[StreamOutcome]:
    """`n` streams over `connections` persistent connections: each of `connections` workers
    sends `n // connections` streams back to back on the shared pool."""
    deadline = time.monotonic() + budget_s
    per_worker = n // connections
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    with httpx.Client(base_url=target.base_url, headers=target.auth_headers,
                      limits=limits) as http:

        def several() -> list[StreamOutcome]:
            return [send_one_stream(http, payload, deadline) for _ in range(per_worker)]

        return _run_workers(connections, per_worker, several, deadline)
