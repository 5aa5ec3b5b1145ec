"""Prometheus metrics: the reference's metric names, read from the engine at scrape time.

The metric families are prometheus-client ``Metric`` objects collected by a registry; the text
is rendered here because prometheus-client renames counters that do not end in ``_total``
(``mlxcel_batch_sequences_started`` would be announced as ``..._started_total``), and the
reference names are exact. Served on /metrics with ``--metrics``, and on its own port with
``--metrics-port``: that port is a second socket of the same uvicorn server and app
(cli.py), so its timeouts, connection cap, API key and browser rules are the main port's;
``MetricsPortGate`` answers only ``/metrics`` there.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.types import ASGIApp, Receive, Scope, Send

from .api.handlers import refuse
from .engine.worker import Engine
from .errors import RouteNotFound

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


class MetricsPortGate:
    """On the ``--metrics-port`` socket, everything but ``/metrics`` is 404."""

    def __init__(self, app: ASGIApp, port: int) -> None:
        self.app = app
        self.port = port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server = scope.get("server") or ("", None)
        if (scope["type"] in ("http", "websocket") and server[1] == self.port
                and scope["path"] != "/metrics"):
            where = f"{scope.get('method', 'GET')} {scope['path'][:100]}"
            await refuse(RouteNotFound(f"Invalid URL ({where}): metrics are served at "
                                       "/metrics"), scope, receive, send)
            return
        await self.app(scope, receive, send)
