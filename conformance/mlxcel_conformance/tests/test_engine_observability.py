"""mlxcel's observability and scheduling through the HTTP API: /slots, /props, /metrics,
prompt-cache stats, admission control (503), slots freed after disconnects, X-Priority."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.engine_checks import (
    check_anthropic_overloaded,
    check_cache_stats,
    check_metrics_delta,
    check_metrics_names,
    check_priority_order,
    check_server_busy,
    check_slots_idle,
)
from mlxcel_conformance.checks.llama_native import check_llama_props, check_llama_slots
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import (
    CHAT_PATH,
    chat_json,
    chat_payload,
    chat_stream,
    check_schema,
    check_schema_reference,
    completion_json,
    completion_payload,
    completion_stream,
)
from mlxcel_conformance.flows_typed import ANTHROPIC_HEADERS, MESSAGES_PATH, messages_payload
from mlxcel_conformance.readers import read_chat
from mlxcel_conformance.surfaces import offers, require_surface

IDLE_LIMIT_S = 3.0
# Held streams that overfill a server which does not report its slots and queue in /health.
OVERLOAD_DEFAULT = 48
OVERLOAD_MAX = 512


def _long_stream(model_name: str | None) -> dict[str, Any]:
    return chat_payload(model_name, "Tell me a story.", max_tokens=4000, stream=True,
                        temperature=1.0, seed=3, ignore_eos=True)


def _hold_stream(client: SuiteClient, payload: dict[str, Any], release: threading.Event,
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


def _wait_until(predicate: Callable[[], bool], limit_s: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        if predicate():
            break
        time.sleep(0.05)
    return time.monotonic() - started


def _slots(client: SuiteClient) -> list[dict[str, Any]]:
    require_surface(client, "/slots")
    response = client.get("/slots")
    expect_status(response, 200)
    body: list[dict[str, Any]] = json_body(response)
    check_llama_slots(body)
    return body


def _overload_count(client: SuiteClient) -> int:
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


def _all_idle(client: SuiteClient) -> bool:
    return all(s["state"] == "idle" for s in _slots(client))


def _metrics(client: SuiteClient) -> dict[str, float]:
    require_surface(client, "/metrics")  # the reference serves it only with --metrics
    response = client.get("/metrics")
    expect_status(response, 200)
    return check_metrics_names(response.text)


def _props(client: SuiteClient) -> dict[str, Any]:
    require_surface(client, "/props")
    response = client.get("/props")
    expect_status(response, 200)
    body: dict[str, Any] = json_body(response)
    check_llama_props(body)
    return body


@pytest.mark.conformance(family="observability", feature="observability.props")
def test_props_documented_fields(client: SuiteClient) -> None:
    _props(client)


@pytest.mark.conformance(family="observability", feature="observability.props.reference",
                         extension="observability")
def test_props_reference_fields(client: SuiteClient) -> None:
    check_schema_reference("GET", "/props", 200, _props(client))


@pytest.mark.conformance(family="observability", feature="observability.slots")
def test_slots_one_per_slot(client: SuiteClient) -> None:
    slots = _slots(client)
    if offers(client, "/props"):
        total = _props(client)["total_slots"]
        if len({s["id"] for s in slots}) < total:
            fail("llama_slots", f"/slots lists {len(slots)} slots, /props total_slots {total}",
                 slots=slots)


@pytest.mark.conformance(family="observability", feature="observability.slots.reference",
                         extension="observability")
def test_slots_match_props_and_health(client: SuiteClient) -> None:
    slots = _slots(client)
    check_schema_reference("GET", "/slots", 200, slots)
    total = _props(client)["total_slots"]
    health = json_body(client.http.get("/health", headers={"Authorization": ""}))
    assert len([s for s in slots if s["state"] != "queued"]) == total, slots
    assert {s["context_size"] for s in slots} == {health["context_size"]}, (slots, health)


@pytest.mark.conformance(family="observability", feature="observability.cache_stats",
                         extension="observability")
def test_cache_stats_and_reset(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, "Count to five.", max_tokens=4, temperature=0)
    chat_json(client, payload)
    require_surface(client, "/v1/cache/stats")
    before = json_body(client.get("/v1/cache/stats"))
    check_schema("GET", "/v1/cache/stats", 200, before)
    check_cache_stats(before)
    body = chat_json(client, payload)
    after = json_body(client.get("/v1/cache/stats"))
    check_cache_stats(after)
    if after["enabled"]:
        assert after["lookups"] == before["lookups"] + 1, (before, after)
        cached = (body["usage"].get("prompt_tokens_details") or {}).get("cached_tokens", 0)
        assert cached > 0 and after["hits"] == before["hits"] + 1, (body["usage"], after)
    reset = client.post("/v1/cache/reset")
    expect_status(reset, 200)
    check_cache_stats(json_body(reset))
    again = json_body(client.post("/v1/cache/reset"))
    check_cache_stats(again)
    assert again["entries"] == 0, again


@pytest.mark.conformance(family="observability", feature="observability.cache_prompt_false")
def test_cache_prompt_false_is_cold(client: SuiteClient, model_name: str | None) -> None:
    payload = chat_payload(model_name, "Count to five.", max_tokens=4, temperature=0)
    read_chat(client, payload)
    body = read_chat(client, {**payload, "cache_prompt": False})
    details = (body.get("usage") or {}).get("prompt_tokens_details") or {}
    assert details.get("cached_tokens", 0) == 0, body.get("usage")


@pytest.mark.conformance(family="observability", feature="observability.metrics_exact",
                         extension="observability")
def test_metrics_counters_exact(client: SuiteClient, model_name: str | None) -> None:
    assert _wait_until(lambda: _all_idle(client), 10) < 10
    before = _metrics(client)
    counted = [
        chat_json(client, chat_payload(model_name, max_tokens=5, temperature=0))["usage"],
        chat_stream(client, chat_payload(model_name, max_tokens=6, temperature=0,
                                         stream_options={"include_usage": True})).usage(),
        completion_json(client, completion_payload(model_name, max_tokens=7,
                                                   temperature=0))["usage"],
    ]
    # Not counted: a streaming /v1/completions, and a chat stream the client cancelled.
    completion_stream(client, completion_payload(model_name, max_tokens=5, temperature=0))
    release = threading.Event()
    release.set()
    _hold_stream(client, _long_stream(model_name), release, events=2)
    assert _wait_until(lambda: _all_idle(client), 10) < 10
    after = _metrics(client)
    usages = [u for u in counted if u]
    assert len(usages) == 3
    check_metrics_delta(before, after, {
        "mlxcel_requests_total": 3,
        "mlxcel_completion_tokens_total": sum(u["completion_tokens"] for u in usages),
        "mlxcel_prompt_tokens_total": sum(u["prompt_tokens"] for u in usages),
        "mlxcel_batch_sequences_started": 5,
        "mlxcel_batch_sequences_completed": 5,
    })


@pytest.mark.conformance(family="observability", feature="observability.slots_freed",
                         extension="observability",
                         destructive="last")
def test_slots_freed_after_disconnect(client: SuiteClient, model_name: str | None) -> None:
    release = threading.Event()
    total = _props(client)["total_slots"]
    with ThreadPoolExecutor(max_workers=total * 2) as pool:
        futures = [pool.submit(_hold_stream, client, _long_stream(model_name), release)
                   for _ in range(total * 2)]
        _wait_until(lambda: not _all_idle(client), 10)
        time.sleep(0.3)
        release.set()
        for future in futures:
            future.result()
    waited = _wait_until(lambda: _all_idle(client), IDLE_LIMIT_S)
    check_slots_idle(_slots(client), waited, IDLE_LIMIT_S)
    health = client.http.get("/health", headers={"Authorization": ""})
    expect_status(health, 200)


@pytest.mark.conformance(family="mlxcel-ext", feature="admission.server_busy",
                         extension="admission",
                         destructive=True)
def test_overload_answers_503_before_headers(client: SuiteClient, model_name: str | None) -> None:
    release = threading.Event()
    n = _overload_count(client)
    with ThreadPoolExecutor(max_workers=n) as pool:
        futures = [pool.submit(_hold_stream, client, _long_stream(model_name), release)
                   for _ in range(n)]
        _wait_until(lambda: any(f.done() for f in futures), 10)
        time.sleep(0.5)
        release.set()
        statuses = [f.result() for f in futures]
    check_server_busy(statuses)
    _wait_until(lambda: _all_idle(client), IDLE_LIMIT_S)


def _held_overload(client: SuiteClient, model_name: str | None, release: threading.Event,
                   pool: ThreadPoolExecutor, n: int) -> list[Any]:
    """Overfill the queue with held streams; returns once one of them was refused."""
    futures = [pool.submit(_hold_stream, client, _long_stream(model_name), release)
               for _ in range(n)]
    _wait_until(lambda: any(f.done() for f in futures), 10)
    time.sleep(0.5)
    return futures


@pytest.mark.conformance(family="mlxcel-ext", feature="admission.anthropic_overloaded",
                         extension="admission",
                         destructive=True)
@pytest.mark.parametrize("stream", [False, True])
def test_overload_answers_529_on_anthropic_routes(client: SuiteClient, model_name: str | None,
                                                  stream: bool) -> None:
    release = threading.Event()
    payload = messages_payload(model_name, max_tokens=8, stream=stream)
    n = _overload_count(client)
    with ThreadPoolExecutor(max_workers=n) as pool:
        try:
            futures = _held_overload(client, model_name, release, pool, n)
            if not any(f.done() and f.result()[0] == 503 for f in futures):
                pytest.skip("the queue never filled (a server without admission control)")
            response = client.post(MESSAGES_PATH, payload, headers=ANTHROPIC_HEADERS)
        finally:
            release.set()
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    check_anthropic_overloaded(response.status_code, response.headers.get("content-type", ""),
                               body)
    _wait_until(lambda: _all_idle(client), IDLE_LIMIT_S)


@pytest.mark.conformance(family="observability", feature="scheduling.priority",
                         extension="observability")
def test_high_priority_admitted_first(client: SuiteClient, model_name: str | None) -> None:
    total = _props(client)["total_slots"]
    releases = [threading.Event() for _ in range(total)]
    order: list[str] = []
    short = chat_payload(model_name, "hi", max_tokens=2, temperature=0)

    def queued(label: str) -> None:
        response = client.post(CHAT_PATH, short, headers={"X-Priority": label})
        expect_status(response, 200)
        order.append(label)

    with ThreadPoolExecutor(max_workers=total + 2) as pool:
        holders = [pool.submit(_hold_stream, client, _long_stream(model_name), release)
                   for release in releases]
        _wait_until(lambda: all(s["state"] != "idle" for s in _slots(client)), 10)
        low = pool.submit(queued, "low")
        _wait_until(lambda: _queued(client) >= 1, 5)
        high = pool.submit(queued, "high")
        _wait_until(lambda: _queued(client) >= 2, 5)
        releases[0].set()  # one slot frees: the queue order decides who takes it
        try:
            high.result(timeout=30)
            time.sleep(0.2)
        finally:
            for release in releases:
                release.set()
        low.result()
        for holder in holders:
            holder.result()
    check_priority_order(order)


def _queued(client: SuiteClient) -> int:
    try:
        return sum(1 for s in _slots(client) if s["state"] == "queued")
    except httpx.HTTPError:
        return 0
