"""What a health route may answer while its server cannot take work, and reading it without racing
the server's load.

A health route of a loaded server answers 200 ``{"status": "ok"}``; while the server cannot take
work it answers 503 with one of the documented bodies:

- llama-server's README, "GET /health: Returns health check result": 503
  ``{"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}`` while
  the model loads; "`/v1/health` also works". At
  https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md#get-health-returns-health-check-result
- llama-server's README as ggml-org/llama.cpp commit e75c627 ("server : enhanced health
  endpoint") wrote it: 503 ``{"status": "no slot available", ...}`` while every slot is busy. At
  https://github.com/ggml-org/llama.cpp/commit/e75c6279d1c8e7abb82a331f5de7124eed402de2
- the reference's spec, ``openapi/openapi.yaml`` ``HealthUnavailable``: 503 with ``status``
  ``no slot available`` or ``loading model``.

How busy a server is depends on every other client: a suite process beside this one can fill
its slots at any moment. A check that reads a health route therefore never judges one busy answer:
it asks again (``settled_health``), and judges an alias by what its route answers at the same
moment (``judge_health_alias``), so it cannot fail at random, and still fails a server that has
no alias (404) or whose alias answers otherwise than its route.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from mlxcel_conformance.checks.registry import fail

BUSY_STATUSES = frozenset({"no slot available", "loading model"})
UNAVAILABLE_TYPE = "unavailable_error"
ATTEMPTS = 5
PAUSE_S = 0.4

Get = Callable[[str], httpx.Response]


def body_of(response: httpx.Response) -> Any:
    """The JSON body, or the text of a body that is not JSON (judged by the caller)."""
    try:
        return response.json()
    except ValueError:
        return response.text[:2000]


def health_unavailable(status: int, body: Any) -> bool:
    """A documented answer of a health route whose server cannot take work now."""
    if status != 503 or not isinstance(body, dict):
        return False
    error = body.get("error")
    if isinstance(error, dict) and error.get("type") == UNAVAILABLE_TYPE:
        return True
    return body.get("status") in BUSY_STATUSES


def settled_health(get: Get, path: str, *, attempts: int = ATTEMPTS, pause_s: float = PAUSE_S,
                   sleep: Callable[[float], None] = time.sleep) -> tuple[int, Any]:
    """GET ``path``'s status and body: its first answer that is not a documented busy 503, or
    the last busy one when the server stayed busy for every attempt."""
    for attempt in range(attempts):
        response = get(path)
        status, body = response.status_code, body_of(response)
        if not health_unavailable(status, body) or attempt + 1 == attempts:
            return status, body
        sleep(pause_s * (attempt + 1))
    raise ValueError("attempts must be at least 1")


def judge_health_alias(get: Get, alias: str = "/v1/health", route: str = "/health", *,
                       attempts: int = ATTEMPTS, pause_s: float = PAUSE_S,
                       sleep: Callable[[float], None] = time.sleep) -> Any:
    """The alias's body, once it answered as its route: 200 ``{"status": "ok"}``, or a documented
    busy 503 while the route, asked right after, was busy too. A 404 (no alias), any other
    answer, or a busy 503 each time the route answered 200 is a FAIL of ``native_aliases``."""
    seen: list[dict[str, Any]] = []
    for attempt in range(attempts):
        response = get(alias)
        status, body = response.status_code, body_of(response)
        if status == 200:
            if not isinstance(body, dict) or body.get("status") != "ok":
                fail("native_aliases", f'GET {alias} must answer {{"status": "ok"}}', body=body)
            return body
        if not health_unavailable(status, body):
            fail("native_aliases", f"GET {alias} must answer as GET {route} (README: "
                 f"`{alias}` also works); got HTTP {status}", status=status, body=body)
        answer = get(route)
        route_status, route_body = answer.status_code, body_of(answer)
        if health_unavailable(route_status, route_body):
            return body  # both busy at once: the alias answers as its route
        seen.append({"alias": status, "route": route_status})
        if attempt + 1 < attempts:
            sleep(pause_s * (attempt + 1))
    fail("native_aliases", f"GET {alias} answered a busy 503 each time while GET {route} "
         "answered otherwise right after", answers=seen, body=body)
