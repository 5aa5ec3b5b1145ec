"""Server configuration: what the CLI (or a test) decides before the app starts."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class ServerConfig:
    model: str
    host: str = "127.0.0.1"
    port: int = 8080
    api_key: str | None = None
    ctx_size: int = 0
    alias: str | None = None
    defaults: GenerationDefaults = field(default_factory=GenerationDefaults)
    # Encoder models for /v1/embeddings and /v1/rerank (None: those routes answer 501).
    embedding_model: str | None = None
    rerank_model: str | None = None
    pooling: str | None = None  # none | mean | cls | last; None = the checkpoint's own
