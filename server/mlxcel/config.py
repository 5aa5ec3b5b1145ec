"""Server configuration: what the CLI (or a test) decides before the app starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .limits import RequestLimits


@dataclass(frozen=True)
class GenerationDefaults:
    """Sampling defaults for fields a request leaves out (llama-server's flag names)."""

    n_predict: int = 512
    temperature: float = 0.8
    top_p: float = 0.95
    top_k: int = 40
    min_p: float = 0.05
    seed: int | None = None
    repeat_penalty: float = 1.0
    repeat_last_n: int = 64
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    dry_multiplier: float = 0.0
    dry_base: float = 1.75
    dry_allowed_length: int = 2
    dry_penalty_last_n: int = 0
    xtc_probability: float = 0.0
    xtc_threshold: float = 0.1


@dataclass(frozen=True)
class ServerConfig:
    model: str
    host: str = "127.0.0.1"
    port: int = 8080
    api_key: str | None = None
    ctx_size: int = 0
    alias: str | None = None
    defaults: GenerationDefaults = field(default_factory=GenerationDefaults)
    parallel: int = 4
    metrics: bool = False
    metrics_port: int | None = None
    slots: bool = True
    # --chat-template (the Jinja text, already read from a file) and --chat-template-kwargs.
    chat_template: str | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=dict)
    # Responses API stores (0 entries disables the store).
    responses_store_max_entries: int = 1024
    responses_store_ttl_secs: int = 3600
    conversation_store_max_entries: int = 256
    conversation_store_ttl_secs: int = 3600
    # Encoder models for /v1/embeddings and /v1/rerank (None: those routes answer 501).
    embedding_model: str | None = None
    rerank_model: str | None = None
    pooling: str | None = None  # none | mean | cls | last; None = the checkpoint's own
    # --audio-model: a Whisper checkpoint makes this an audio-only server (no text model).
    audio_model: str | None = None
    audio_max_queue: int = 4  # requests waiting behind the running one; more get 503
    audio_timeout_s: float = 300.0  # per request, from admission; past it 504
    # --image-model: a Z-Image checkpoint served beside the text model (None: the routes 501).
    image_model: str | None = None
    image_max_queue: int = 4  # requests waiting behind the running one; more get 503
    image_timeout_s: float = 300.0  # per request, from admission; past it 504
    # --adapter-dir: the only directory per-request ``adapters`` may name (None: refused).
    adapter_dir: str | None = None
    # --draft-model: the only draft model a request's ``draft_model`` may name (None: 501).
    draft_model: str | None = None
    # What one request may cost (limits.py), and what reaches the routes (api/guard.py).
    limits: RequestLimits = field(default_factory=RequestLimits)
    allowed_origins: tuple[str, ...] = ()  # browser Origins besides the server's own
    allowed_hosts: tuple[str, ...] = ()  # Host names a loopback server answers besides its own
    timeout_header_s: float = 10.0  # a request's header block must arrive within this
    timeout_read_s: float = 15.0  # a body may pause this long between two reads
    timeout_keep_alive_s: float = 5.0  # an idle kept-alive connection is closed after this
    # Bytes all stored responses may hold together (oldest evicted first).
    responses_store_max_bytes: int = 256 * 1024 * 1024
