"""Prometheus metrics: the reference's metric names, read from the engine at scrape time.

The metric families are prometheus-client ``Metric`` objects collected by a registry; the text
is rendered here because prometheus-client renames counters that do not end in ``_total``
(``mlxcel_batch_sequences_started`` would be announced as ``..._started_total``), and the
reference names are exact. Served on /metrics with ``--metrics``, and on its own port with
``--metrics-port`` (there at ``/metrics`` only, behind the same API key and browser rules).
"""

from __future__ import annotations

import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .api.auth import presented_key
from .api.guard import GuardSettings, refusal
from .config import ServerConfig
from .engine.worker import Engine
from .errors import AuthenticationError, MissingApiKey, MlxcelError, RouteNotFound

CONTENT_TYPE = CONTENT_TYPE_LATEST

_HELP = {
    "mlxcel_requests_total": "Total number of completed generation requests; "
    "chat completion streams cancelled by the client are excluded",
    "mlxcel_prompt_tokens_total": "Total prompt tokens processed",
    "mlxcel_completion_tokens_total": "Total completion tokens of the requests counted in "
    "mlxcel_requests_total",
    "mlxcel_generation_time_seconds_total": "Total generation time in seconds",
    "mlxcel_slots_total": "Total number of parallel slots",
    "mlxcel_slots_available": "Available parallel slots",
    "mlxcel_queue_depth": "Current prefill queue depth",
    "mlxcel_batch_sequences_started": "Total sequences that entered prefill",
    "mlxcel_batch_sequences_completed": "Total sequences that completed generation",
    "mlxcel_batch_prefill_tokens_total": "Cumulative prefill tokens processed",
    "mlxcel_batch_decode_tokens_total": "Cumulative decode tokens generated",
    "mlxcel_batch_current_size": "Current active batch size",
    "mlxcel_cache_pool_active": "Active cache entries",
}


class EngineCollector:
    """A prometheus-client collector reading the engine's counters when scraped."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def values(self) -> dict[str, tuple[str, float]]:
        e, m, s = self.engine, self.engine.metrics, self.engine.stats
        active = e.active_sequences
        cache = len(e.prompt_cache) if e.prompt_cache is not None else 0
        return {
            "mlxcel_requests_total": ("counter", m.requests_total),
            "mlxcel_prompt_tokens_total": ("counter", m.prompt_tokens_total),
            "mlxcel_completion_tokens_total": ("counter", m.completion_tokens_total),
            "mlxcel_generation_time_seconds_total": (
                "counter", round(m.generation_time_seconds_total, 6)),
            "mlxcel_slots_total": ("gauge", e.max_batch_size),
            "mlxcel_slots_available": ("gauge", e.max_batch_size - active),
            "mlxcel_queue_depth": ("gauge", e.queue_depth),
            "mlxcel_batch_sequences_started": ("counter", s.sequences_started),
            "mlxcel_batch_sequences_completed": ("counter", s.sequences_completed),
            "mlxcel_batch_prefill_tokens_total": ("counter", s.total_prefill_tokens),
            "mlxcel_batch_decode_tokens_total": ("counter", s.total_decode_tokens),
            "mlxcel_batch_current_size": ("gauge", active),
            "mlxcel_cache_pool_active": ("gauge", cache),
        }

    def collect(self) -> Iterator[Metric]:
        for name, (kind, value) in self.values().items():
            metric = Metric(name, _HELP[name], kind)
            metric.add_sample(name, {}, float(value))
            yield metric


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def render(registry: CollectorRegistry) -> str:
    lines: list[str] = []
    for metric in registry.collect():
        name = metric.samples[0].name if metric.samples else metric.name
        lines.append(f"# HELP {name} {metric.documentation}")
        lines.append(f"# TYPE {name} {metric.type}")
        lines.extend(f"{sample.name} {_number(sample.value)}" for sample in metric.samples)
    return "\n".join(lines) + "\n"


def engine_registry(engine: Engine) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineCollector(engine))
    return registry


def start_metrics_server(port: int, engine: Engine, config: ServerConfig) -> ThreadingHTTPServer:
    """Serve the same text at ``config.host:port/metrics``, from a daemon thread, with the main
    server's rules: the API key when one is set, and no browser Origin or rebinding Host."""
    registry = engine_registry(engine)
    settings = GuardSettings.of(config)
    key = config.api_key

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            status, body, kind = _metrics_answer(self.path, dict(self.headers.items()),
                                                 registry, settings, key)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            return

    server = ThreadingHTTPServer((config.host, port), Handler)
    threading.Thread(target=server.serve_forever, name="mlxcel-metrics", daemon=True).start()
    return server


def _metrics_answer(path: str, headers: dict[str, str], registry: CollectorRegistry,
                    settings: GuardSettings, api_key: str | None) -> tuple[int, bytes, str]:
    """(status, body, content type) for a GET on the metrics port."""
    lowered = {k.lower().encode("latin-1"): v.encode("latin-1") for k, v in headers.items()}
    error: MlxcelError | None = refusal(settings, lowered, "http")
    if error is None and api_key is not None:
        raw = headers.get("Authorization") or headers.get("authorization") \
            or headers.get("x-api-key") or headers.get("X-Api-Key")
        presented = presented_key(raw)
        if presented is None:
            error = MissingApiKey("Missing API key: send it as 'Authorization: Bearer <key>'.")
        elif not hmac.compare_digest(presented.encode(), api_key.encode()):
            error = AuthenticationError("Invalid API key.")
    if error is None and path.split("?", 1)[0] != "/metrics":
        error = RouteNotFound(f"Invalid URL (GET {path[:100]}): metrics are served at /metrics")
    if error is not None:
        return error.status, json.dumps(error.to_openai()).encode(), "application/json"
    return 200, render(registry).encode(), CONTENT_TYPE
