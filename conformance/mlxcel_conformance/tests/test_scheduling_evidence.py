"""X-Priority and Anthropic's 529, judged on the server's own account (``/slots``, ``/health``)
while the suite holds every competing stream open, so neither verdict depends on how fast the
client's threads run.

- Priority: two queued streams, low then high, wait behind held slots; one slot is freed. Held
  streams cannot end, so exactly one of the two can take that slot, and ``/slots`` (its
  ``params.n_predict``) shows which did. (The earlier check compared the order in which client
  threads recorded two short answers ~6 ms apart, and failed the reference at random.)
- 529: the probe is sent only while ``/health`` shows the queue full, and its answer counts only
  when no slot changed hands around it (``/slots``' ``id_task``); a queue that emptied under the
  probe (a request left over from an earlier check being drained, say) is measured again.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.engine_checks import (
    check_anthropic_overloaded,
    check_priority_order,
)
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.errors import SetupError
from mlxcel_conformance.flows import chat_payload
from mlxcel_conformance.flows_typed import ANTHROPIC_HEADERS, MESSAGES_PATH, messages_payload
from mlxcel_conformance.held_streams import (
    all_idle,
    hold_stream,
    long_stream,
    overload_count,
    queue_state,
    queued,
    slots,
    wait_until,
)

# Seconds for the requests of an earlier check to drain before this one loads the server.
SETTLE_S = 30.0
# n_predict of the two queued streams: /slots tells them apart by it.
BUDGETS = {"high": 3001, "low": 3002}
ADMIT_LIMIT_S = 10.0
# A 529 comes at once, before any header: a probe the server queued instead is cut here.
PROBE_TIMEOUT_S = 10.0
ATTEMPTS = 3


def _queued_stream(model_name: str | None, label: str) -> dict[str, Any]:
    return chat_payload(model_name, "Tell me a story.", max_tokens=BUDGETS[label],
                        stream=True, temperature=1.0, seed=3, ignore_eos=True)


def _admitted(client: SuiteClient) -> tuple[list[str], list[dict[str, Any]]]:
    """Which of the two queued streams hold a slot now, and the ``/slots`` body that says so."""
    body = slots(client)
    budgets = {s["params"].get("n_predict") for s in body if s.get("is_processing")}
    return [label for label, n in BUDGETS.items() if n in budgets], body


@pytest.mark.conformance(family="observability", feature="scheduling.priority",
                         extension="observability")
def test_high_priority_admitted_first(client: SuiteClient, model_name: str | None) -> None:
    wait_until(lambda: all_idle(client), SETTLE_S)
    total = sum(1 for s in slots(client) if s["state"] != "queued")
    releases = [threading.Event() for _ in range(total + 2)]
    seen: tuple[list[str], list[dict[str, Any]]] = ([], [])
    with ThreadPoolExecutor(max_workers=total + 2) as pool:
        futures = [pool.submit(hold_stream, client, long_stream(model_name), release)
                   for release in releases[:total]]
        try:
            wait_until(lambda: all(s["is_processing"] for s in slots(client)
                                   if s["state"] != "queued"), ADMIT_LIMIT_S)
            for n, label in enumerate(("low", "high")):
                futures.append(pool.submit(hold_stream, client, _queued_stream(model_name, label),
                                           releases[total + n], {"X-Priority": label}, 2))
                wait_until(lambda: queued(client) >= len(futures) - total, 5)
            releases[0].set()  # one slot frees; the two queued streams are held: one takes it

            def admitted() -> bool:
                nonlocal seen
                seen = _admitted(client)
                return bool(seen[0])

            wait_until(admitted, ADMIT_LIMIT_S)
        finally:
            for release in releases:
                release.set()
            for future in futures:
                future.result()
    check_priority_order(seen[0], seen[1])


def _probe(client: SuiteClient, stream: bool, model_name: str | None) -> tuple[int, str, Any]:
    payload = messages_payload(model_name, max_tokens=8, stream=stream)
    try:
        response = client.post(MESSAGES_PATH, payload, headers=ANTHROPIC_HEADERS,
                               timeout=PROBE_TIMEOUT_S)
    except httpx.TimeoutException:
        return 0, "", f"no answer within {PROBE_TIMEOUT_S:.0f} s (queued, not refused)"
    try:
        return response.status_code, response.headers.get("content-type", ""), response.json()
    except ValueError:
        return response.status_code, response.headers.get("content-type", ""), response.text


def _overloaded_probe(client: SuiteClient, model_name: str | None,
                      stream: bool) -> tuple[int, str, Any] | None:
    """The probe's answer while the queue is full, or None when the server's account shows
    the queue was not full around it (measure again)."""
    wait_until(lambda: all_idle(client), SETTLE_S)
    release = threading.Event()
    n = overload_count(client)
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures: list[Future[tuple[int, str, Any]]] = [
            pool.submit(hold_stream, client, long_stream(model_name), release) for _ in range(n)]
        try:
            wait_until(lambda: any(f.done() for f in futures), 10)
            if not any(f.done() and f.result()[0] == 503 for f in futures):
                pytest.skip("the queue never filled (a server without admission control)")
            wait_until(lambda: queue_state(client).full, 5)
            before = queue_state(client)
            answer = _probe(client, stream, model_name)
            after = queue_state(client)
        finally:
            release.set()
    settled = before.full and after.full and before.tasks == after.tasks
    return answer if answer[0] == 529 or settled else None


@pytest.mark.conformance(family="mlxcel-ext", feature="admission.anthropic_overloaded",
                         extension="admission",
                         destructive=True)
@pytest.mark.parametrize("stream", [False, True])
def test_overload_answers_529_on_anthropic_routes(client: SuiteClient, model_name: str | None,
                                                  stream: bool) -> None:
    for _ in range(ATTEMPTS):
        answer = _overloaded_probe(client, model_name, stream)
        if answer is not None:
            break
    else:
        raise SetupError(f"the queue did not stay full around the probe in {ATTEMPTS} tries "
                         "(slots kept changing hands)")
    check_anthropic_overloaded(*answer)
    wait_until(lambda: all_idle(client), SETTLE_S)
