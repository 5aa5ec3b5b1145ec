"""Server configuration: what the CLI (or a test) decides before the app starts.

Each field's default is its setting's declared default (``settings/``); the CLI fills the
fields from the parsed settings (``settings/derive.py``). What only one API family reads (its
side model, its store) is that family's section, a dataclass the family owns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .limits import RequestLimits
from .settings.catalog import default_of


def _g(field: str) -> Any:
    return default_of("defaults", field)


def _s(field: str) -> Any:
    return default_of("server", field)


@dataclass(frozen=True)
class GenerationDefaults:
    """Sampling defaults for fields a request leaves out (llama-server's flag names)."""

    n_predict: int = _g("n_predict")
    temperature: float = _g("temperature")
    top_p: float = _g("top_p")
    top_k: int = _g("top_k")
    min_p: float = _g("min_p")
    seed: int | None = _g("seed")
    repeat_penalty: float = _g("repeat_penalty")
    repeat_last_n: int = _g("repeat_last_n")
    frequency_penalty: float = _g("frequency_penalty")
    presence_penalty: float = _g("presence_penalty")
    dry_multiplier: float = _g("dry_multiplier")
    dry_base: float = _g("dry_base")
    dry_allowed_length: int = _g("dry_allowed_length")
    dry_penalty_last_n: int = _g("dry_penalty_last_n")
    xtc_probability: float = _g("xtc_probability")
    xtc_threshold: float = _g("xtc_threshold")


@dataclass(frozen=True)
class ServerConfig:
    """What the server runs with; each setting's meaning is its help text (``settings/``)."""

    model: str
    host: str = _s("host")
    port: int = _s("port")
    api_key: str | None = _s("api_key")
    ctx_size: int = _s("ctx_size")
    alias: str | None = _s("alias")
    defaults: GenerationDefaults = field(default_factory=GenerationDefaults)
    parallel: int = default_of("engine", "parallel")
    metrics: bool = _s("metrics")
    metrics_port: int | None = _s("metrics_port")
    slots: bool = _s("slots")
    # --chat-template (the Jinja text, already read from a file) and --chat-template-kwargs.
    chat_template: str | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    prefill_assistant: bool = _s("prefill_assistant")
    # --adapter-dir: the only directory per-request ``adapters`` may name (None: refused).
    adapter_dir: str | None = _s("adapter_dir")
    draft_model: str | None = _s("draft_model")
    limits: RequestLimits = field(default_factory=RequestLimits)
    allowed_origins: tuple[str, ...] = _s("allowed_origins")
    allowed_hosts: tuple[str, ...] = _s("allowed_hosts")
    timeout_header_s: float = _s("timeout_header_s")
    timeout_read_s: float = _s("timeout_read_s")
    timeout_body_s: float = _s("timeout_body_s")
    max_connections: int = _s("max_connections")
    shutdown_grace_s: float = _s("shutdown_grace_s")
    timeout_keep_alive_s: float = _s("timeout_keep_alive_s")
    # Each family's own settings, by the family's package name: its config dataclass, or the
    # values the CLI parsed for it (``settings.derive.sections``); read with ``section``.
    sections: Mapping[str, Any] = field(default_factory=dict)


S = TypeVar("S")


def section(config: ServerConfig, name: str, kind: type[S]) -> S:
    """The settings section ``name`` of ``config`` as the family's dataclass ``kind``: as
    given, built from the parsed values, or (absent) its defaults."""
    given = config.sections.get(name)
    if isinstance(given, kind):
        return given
    return kind(**(given or {}))
