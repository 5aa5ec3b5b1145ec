"""Streams the suite holds open to fill a server's slots and queue, and what the server says
about them (``/slots``, ``/health``): the tools of the scheduling and admission checks, which
judge the server's own account of who holds a slot and how full its queue is, never the order
in which client threads happen to see answers.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from .checks.llama_native import check_llama_slots
from .client import SuiteClient, expect_status, json_body
from .flows import CHAT_PATH, chat_payload
from .surfaces import require_surface

IDLE_LIMIT_S = 3.0
# Held streams that overfill a server which does not report its slots and queue in /health.
OVERLOAD_DEFAULT = 48
OVERLOAD_MAX = 512


def long_stream(model_name: str | None) -> dict[str, Any]:
    return chat_payload(model_name, "Tell me a story.", max_tokens=4000, stream=True,
                        temperature=1.0, seed=3, ignore_eos=True)


def hold_stream(client: SuiteClient, payload: dict[str, Any], release: threading.Event,
                 headers: dict[str, str] | None = None,
                 events: int = 1) -> tuple[int, str, Any]:
    """Open a stream, read its first ``events`` events, then hold it until ``release``;
    closing the connection is the disconnect. The role chunk may come before the request
    reaches a slot; a second event is a generated token, so the sequence has started."""
    with client.http.stream("POST", CHAT_PATH, json=payload, headers=headers or {}) as resp:
        content_type = resp.headers.get("content-type", "")
        if resp.status_code != 200:
            resp.read()
            try:
                return resp.status_code, content_type, resp.json()
            except ValueError:
                return resp.status_code, content_type, resp.text
        seen = 0
        for line in resp.iter_lines():
            seen += line.startswith("data:")
            if seen >= events and release.wait(0):
                break
        return 200, content_type, None


def wait_until(predicate: Callable[[], bool], limit_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        if predicate():
            break
        time.sleep(0.05)
    return time.monotonic() - started


def slots(client: SuiteClient) -> list[dict[str, Any]]:
    require_surface(client, "/slots")
    response = client.get("/slots")
    expect_status(response, 200)
    body: list[dict[str, Any]] = json_body(response)
    check_llama_slots(body)
    return body


def overload_count(client: SuiteClient) -> int:
    """Held streams that overfill the server: its slots plus its queue (``/health``'s
    ``batch``, the reference's own extension) and a margin; ``OVERLOAD_DEFAULT`` where it does
    not report both (a fixed count failed the reference started with ``--parallel 12``, whose
    queue then holds 48)."""
    try:
        batch = client.get("/health").json().get("batch")
    except (ValueError, AttributeError, httpx.HTTPError):
        return OVERLOAD_DEFAULT
    slots = batch.get("max_batch_size") if isinstance(batch, dict) else None
    queue = batch.get("max_queue") if isinstance(batch, dict) else None
    if isinstance(slots, int) and isinstance(queue, int):
        return min(slots + queue + 8, OVERLOAD_MAX)
    return OVERLOAD_DEFAULT


def all_idle(client: SuiteClient) -> bool:
    return all(s["state"] == "idle" for s in slots(client))


def queued(client: SuiteClient) -> int:
    """Requests waiting for a slot, as ``/slots`` lists them (0 when it cannot be read)."""
    try:
        return sum(1 for s in slots(client) if s["state"] == "queued")
    except httpx.HTTPError:
        return 0


@dataclass(frozen=True)
class QueueState:
    """The server's account of its load at one moment: which tasks hold a slot (``/slots``'
    ``id_task``), how many requests wait, and how many may (``/health``'s ``batch``)."""

    tasks: tuple[int, ...]
    depth: int | None
    capacity: int | None

    @property
    def full(self) -> bool:
        return self.depth is not None and self.capacity is not None and \
            self.depth >= self.capacity


def queue_state(client: SuiteClient) -> QueueState:
    tasks = tuple(sorted(int(s["id_task"]) for s in slots(client) if s.get("is_processing")))
    try:
        batch = client.get("/health").json().get("batch")
    except (ValueError, AttributeError, httpx.HTTPError):
        batch = None
    batch = batch if isinstance(batch, dict) else {}
    depth, capacity = batch.get("queue_depth"), batch.get("max_queue")
    return QueueState(tasks, depth if isinstance(depth, int) else None,
                      capacity if isinstance(capacity, int) else None)
