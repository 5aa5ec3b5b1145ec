"""mlxcel's observability and scheduling through the HTTP API: /slots, /props, /metrics,
prompt-cache stats, admission control (503), slots freed after disconnects, X-Priority."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from mlxcel_conformance.checks.engine_checks import (
    check_cache_stats,
    check_metrics_delta,
    check_metrics_names,
    check_server_busy,
    check_slots_idle,
)
from mlxcel_conformance.checks.llama_native import check_llama_props
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import (
    chat_json,
    chat_payload,
    chat_stream,
    check_schema,
    check_schema_reference,
    completion_json,
    completion_payload,
    completion_stream,
)
from mlxcel_conformance.held_streams import IDLE_LIMIT_S
from mlxcel_conformance.held_streams import all_idle as _all_idle
from mlxcel_conformance.held_streams import hold_stream as _hold_stream
from mlxcel_conformance.held_streams import long_stream as _long_stream
from mlxcel_conformance.held_streams import overload_count as _overload_count
from mlxcel_conformance.held_streams import slots as _slots
from mlxcel_conformance.held_streams import wait_until as _wait_until
from mlxcel_conformance.readers import read_chat
from mlxcel_conformance.surfaces import offers, require_surface


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
