"""``mlxcel-server``: command line, with llama-server's flag names and LLAMA_ARG_* env vars."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

import uvicorn

from . import __version__
from .app import create_app
from .bundled import bundled_model_path
from .chat.template import load_template_override
from .chat.template_kwargs import parse_server_kwargs
from .config import GenerationDefaults, ServerConfig
from .engine.distributed import (
    is_follower,
    run_follower,
    sharded_engine_config,
    sharding_group,
)
from .engine.prompt_cache import DEFAULT_CAPACITY_BYTES, DEFAULT_MAX_ENTRIES, DEFAULT_TTL_S
from .engine.worker import Engine, EngineConfig
from .http_server import guarded_protocol, raise_open_file_limit
from .limits import RequestLimits
from .media.policy import (
    DEFAULT_DECODE_TIMEOUT_S,
    DEFAULT_FETCH_TIMEOUT_S,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    DEFAULT_VIDEO_MAX_FRAMES,
    MediaPolicy,
    policy_from_settings,
)
from .memory import limit_malloc_arenas
from .observability import start_metrics_server


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


# The Responses API stores: flag name -> default (flag value 0 entries disables a store).
STORE_FLAGS = {
    "responses-store-max-entries": 1024,
    "responses-store-ttl-secs": 3600,
    "conversation-store-max-entries": 256,
    "conversation-store-ttl-secs": 3600,
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="mlxcel-server",
        description="The mlxcel reference MLX inference server (OpenAI-compatible).",
    )
    add = p.add_argument
    add("--version", action="version", version=f"mlxcel-server {__version__}")
    add("-m", "--model", default=_env("LLAMA_ARG_MODEL"),
        help="local model directory or hub id (default: the bundled fixture model) "
        "[env LLAMA_ARG_MODEL]")
    add("--host", default=_env("LLAMA_ARG_HOST", "127.0.0.1"), help="[env LLAMA_ARG_HOST]")
    add("--port", type=int, default=int(_env("LLAMA_ARG_PORT", "8080") or 8080),
        help="[env LLAMA_ARG_PORT]")
    add("--api-key", default=_env("LLAMA_API_KEY"),
        help="require this key in the Authorization header [env LLAMA_API_KEY]")
    add("-c", "--ctx-size", type=int, default=int(_env("LLAMA_ARG_CTX_SIZE", "0") or 0),
        help="context size (0 = the model's own) [env LLAMA_ARG_CTX_SIZE]")
    add("-a", "--alias", default=_env("LLAMA_ARG_ALIAS"),
        help="model name reported to clients [env LLAMA_ARG_ALIAS]")
    d = GenerationDefaults()
    add("-n", "--n-predict", type=int, default=int(_env("LLAMA_ARG_N_PREDICT", "0") or 0)
        or d.n_predict, help="default max tokens [env LLAMA_ARG_N_PREDICT]")
    add("--temp", type=float, default=d.temperature)
    add("--top-k", type=int, default=d.top_k)
    add("--top-p", type=float, default=d.top_p)
    add("--min-p", type=float, default=d.min_p)
    add("--seed", type=int, default=None)
    add("--repeat-penalty", type=float, default=d.repeat_penalty)
    add("--repeat-last-n", type=int, default=d.repeat_last_n)
    add("--frequency-penalty", type=float, default=d.frequency_penalty)
    add("--presence-penalty", type=float, default=d.presence_penalty)
    add("--dry-multiplier", type=float, default=d.dry_multiplier)
    add("--dry-base", type=float, default=d.dry_base)
    add("--dry-allowed-length", type=int, default=d.dry_allowed_length)
    add("--dry-penalty-last-n", type=int, default=d.dry_penalty_last_n)
    add("--xtc-probability", type=float, default=d.xtc_probability)
    add("--xtc-threshold", type=float, default=d.xtc_threshold)
    add_engine_flags(p)
    add_media_flags(p)
    add_speculative_flags(p)
    add("--chat-template", default=_env("LLAMA_ARG_CHAT_TEMPLATE"),
        help="Jinja chat template (text or a file path) replacing the model's "
        "[env LLAMA_ARG_CHAT_TEMPLATE]")
    add("--chat-template-file", default=_env("LLAMA_ARG_CHAT_TEMPLATE_FILE"),
        help="file holding the Jinja chat template [env LLAMA_ARG_CHAT_TEMPLATE_FILE]")
    add("--chat-template-kwargs", default=_env("LLAMA_ARG_CHAT_TEMPLATE_KWARGS"),
        help="JSON object of default template kwargs; request keys win "
        "[env LLAMA_ARG_CHAT_TEMPLATE_KWARGS]")
    for flag, default in STORE_FLAGS.items():
        env = "LLAMA_ARG_" + flag.upper().replace("-", "_")
        add(f"--{flag}", type=int, default=int(_env(env, str(default)) or default),
            help=f"Responses API store setting, 0 entries disables it (default {default}) "
            f"[env {env}]")
    add("--embedding-model", default=_env("MLXCEL_EMBEDDING_MODEL"),
        help="encoder (BERT-family) model directory or hub id for /v1/embeddings, /embedding "
        "and /embeddings [env MLXCEL_EMBEDDING_MODEL]")
    add("--rerank-model", default=_env("MLXCEL_RERANK_MODEL"),
        help="cross-encoder (*ForSequenceClassification) for /v1/rerank and its aliases "
        "[env MLXCEL_RERANK_MODEL]")
    add("--pooling", default=_env("LLAMA_ARG_POOLING"), choices=["none", "mean", "cls", "last"],
        help="embedding pooling (default: the checkpoint's sentence-transformers setting, "
        "else mean) [env LLAMA_ARG_POOLING]")
    add_image_flags(p)
    add_audio_flags(p)
    add_limit_flags(p)
    add("--adapter-dir", default=_env("MLXCEL_ADAPTER_DIR"),
        help="directory of LoRA adapters that a request's mlx-lm `adapters` field may name; "
        "without it such requests get 400 [env MLXCEL_ADAPTER_DIR]")
    add("--log-level", default=_env("MLXCEL_LOG_LEVEL", "info"),
        choices=["debug", "info", "warning", "error"])
    return p


def _int_env(name: str, default: int) -> int:
    return int(_env(name, str(default)) or default)


def _float_env(name: str, default: float) -> float:
    return float(_env(name, str(default)) or default)


def _list_env(name: str) -> list[str]:
    return [v.strip() for v in (_env(name, "") or "").split(",") if v.strip()]


def add_limit_flags(p: argparse.ArgumentParser) -> None:
    """What one request may cost, how long a client may take, and who may call (docs/limits.md)."""
    add, d = p.add_argument, RequestLimits()
    add("--max-body-bytes", type=int, default=_int_env("MLXCEL_MAX_BODY_BYTES", d.max_body_bytes),
        help=f"largest request body on any route; larger is 413 before it is read (default "
        f"{d.max_body_bytes}) [env MLXCEL_MAX_BODY_BYTES]")
    add("--max-json-values", type=int, default=d.max_json_values,
        help=f"most array items and object members in a JSON body (objects and arrays: a "
        f"twentieth of it); more is 413 before it is parsed (default {d.max_json_values})")
    add("--max-json-depth", type=int, default=d.max_json_depth,
        help=f"deepest nesting of a JSON body (default {d.max_json_depth})")
    add("--max-stop-strings", type=int, default=d.max_stop_strings,
        help=f"most stop strings per request (default {d.max_stop_strings})")
    add("--max-stop-chars", type=int, default=d.max_stop_chars,
        help=f"longest stop string, in characters (default {d.max_stop_chars})")
    add("--max-dry-breakers", type=int, default=d.max_dry_breakers,
        help=f"most dry_sequence_breakers per request (default {d.max_dry_breakers})")
    add("--dry-breaker-chars", type=int, default=d.dry_breaker_chars,
        help=f"characters kept of each string DRY breaker, as llama.cpp cuts them (default "
        f"{d.dry_breaker_chars})")
    add("--max-logit-bias", type=int, default=d.max_logit_bias,
        help=f"most logit_bias entries per request; more is 400 before they are validated "
        f"(default {d.max_logit_bias})")
    add("--max-tokenize-chars", type=int, default=d.max_tokenize_chars,
        help=f"longest text tokenized at once (a prompt, a message list as rendered, "
        f"/tokenize content); longer is 400 context_length_exceeded (default "
        f"{d.max_tokenize_chars})")
    add("--max-schema-depth", type=int, default=d.max_schema_depth,
        help=f"deepest nesting of a tool or response_format JSON schema (default "
        f"{d.max_schema_depth})")
    add("--prepare-threads", type=int, default=d.prepare_threads,
        help=f"worker threads that parse, render and tokenize requests off the event loop "
        f"(default {d.prepare_threads})")
    add("--timeout-header", type=float, default=_float_env("MLXCEL_TIMEOUT_HEADER", 10.0),
        help="seconds a request's headers may take to arrive; then 408 and close (default 10) "
        "[env MLXCEL_TIMEOUT_HEADER]")
    add("--timeout-read", type=float, default=_float_env("MLXCEL_TIMEOUT_READ", 15.0),
        help="seconds a request body may pause between two reads; then 408 (default 15) "
        "[env MLXCEL_TIMEOUT_READ]")
    add("--timeout-keep-alive", type=float, default=_float_env("MLXCEL_TIMEOUT_KEEP_ALIVE", 5.0),
        help="seconds an idle kept-alive connection stays open (default 5) "
        "[env MLXCEL_TIMEOUT_KEEP_ALIVE]")
    add("--allowed-origins", default=",".join(_list_env("MLXCEL_ALLOWED_ORIGINS")),
        help="comma-separated browser origins (e.g. http://localhost:3000) allowed to call the "
        "server besides its own; '*' allows any; a request with another Origin gets 403 "
        "[env MLXCEL_ALLOWED_ORIGINS]")
    add("--allowed-hosts", default=",".join(_list_env("MLXCEL_ALLOWED_HOSTS")),
        help="comma-separated Host names a server bound to loopback also answers ('*': any); "
        "others get 403 (DNS rebinding) [env MLXCEL_ALLOWED_HOSTS]")
    add("--responses-store-max-bytes", type=int, default=256 * 1024 * 1024,
        help="bytes each Responses API store (responses, conversations) may hold; the oldest "
        "entries go first (default 268435456)")


def request_limits(args: argparse.Namespace) -> RequestLimits:
    return RequestLimits(
        max_body_bytes=max(1, args.max_body_bytes), max_json_values=max(1, args.max_json_values),
        max_json_depth=max(2, args.max_json_depth), max_stop_strings=max(0, args.max_stop_strings),
        max_stop_chars=max(1, args.max_stop_chars), max_dry_breakers=max(0, args.max_dry_breakers),
        dry_breaker_chars=max(1, args.dry_breaker_chars),
        max_logit_bias=max(0, args.max_logit_bias),
        max_tokenize_chars=max(1, args.max_tokenize_chars),
        max_schema_depth=max(1, args.max_schema_depth),
        prepare_threads=max(1, args.prepare_threads),
    )


def _split(value: str) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def add_audio_flags(p: argparse.ArgumentParser) -> None:
    """The audio-only server: a Whisper or Kokoro checkpoint and its single-worker queue."""
    add = p.add_argument
    add("--audio-model", default=_env("MLXCEL_AUDIO_MODEL"),
        help="Whisper or Kokoro checkpoint (directory or hub id; the kind is read from its "
        "config.json): start an audio-only server, with no text model, for "
        "/v1/audio/transcriptions and /v1/audio/translations (Whisper) or /v1/audio/speech "
        "(Kokoro); needs the audio extra [env MLXCEL_AUDIO_MODEL]")
    add_worker_flags(p, "audio")


def add_worker_flags(p: argparse.ArgumentParser, kind: str) -> None:
    """``--KIND-max-queue`` and ``--KIND-timeout``: the queue of a single-worker backend."""
    env = f"MLXCEL_{kind.upper()}"
    p.add_argument(f"--{kind}-max-queue", type=int,
                   default=int(_env(f"{env}_MAX_QUEUE", "4") or 4),
                   help=f"{kind} requests that may wait behind the running one; beyond it 503 "
                   f"[env {env}_MAX_QUEUE]")
    p.add_argument(f"--{kind}-timeout", type=float,
                   default=float(_env(f"{env}_TIMEOUT", "300") or 300),
                   help=f"seconds an {kind} request may take from admission to its answer; past "
                   f"it 504 [env {env}_TIMEOUT]")


def add_image_flags(p: argparse.ArgumentParser) -> None:
    """Image generation beside the text model: a Z-Image checkpoint and its single worker."""
    add = p.add_argument
    add("--image-model", default=_env("MLXCEL_IMAGE_MODEL"),
        help="Z-Image checkpoint directory (diffusers layout: transformer/, text_encoder/, vae/, "
        "tokenizer/) for /v1/images/generations and /v1/images/edits, loaded at startup beside "
        "the text model; needs the images extra and mflux 0.24.0 [env MLXCEL_IMAGE_MODEL]")
    add_worker_flags(p, "image")


def _check_image_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A missing backend or a directory that is no Z-Image checkpoint stops the server here,
    before anything loads; what only loading can tell stops it at startup."""
    from .images.checkpoint import ImageCheckpointError, check_layout
    from .images.zimage import ImageBackendMissing, require_mflux

    if args.image_max_queue < 0 or args.image_timeout <= 0:
        parser.error("--image-max-queue must be >= 0 and --image-timeout > 0")
    try:
        check_layout(args.image_model)
        require_mflux()
    except (ImageCheckpointError, ImageBackendMissing) as exc:
        parser.error(f"--image-model: {exc}")


def _flag(name: str) -> bool:
    return (_env(name, "") or "").lower() in ("1", "true", "on", "yes", "enabled")


def add_media_flags(p: argparse.ArgumentParser) -> None:
    """Image inputs of a vision-language model: readable local roots and the bounds."""
    add = p.add_argument
    env_paths = [v for v in (_env("MLXCEL_MEDIA_PATH", "") or "").split(",") if v]
    add("--media-path", action="append", default=env_paths,
        help="directory whose files image URLs may name (file:// or absolute path); "
        "repeatable, or comma-separated in the variable; without it every local path is refused "
        "[env MLXCEL_MEDIA_PATH]")
    add("--media-max-bytes", type=int, default=DEFAULT_MAX_BYTES,
        help="largest image a request may send or name, in bytes (413 beyond)")
    add("--media-max-pixels", type=int, default=DEFAULT_MAX_PIXELS,
        help="largest image, width x height, read from its header before decoding (413 beyond)")
    add("--media-decode-timeout", type=float, default=DEFAULT_DECODE_TIMEOUT_S,
        help="seconds one image may take to decode (400 image_decode_timeout beyond)")
    add("--media-fetch-timeout", type=float, default=DEFAULT_FETCH_TIMEOUT_S,
        help="seconds an http(s) image may take to download (400 media_fetch_timeout beyond)")
    add("--video-max-frames", type=int, default=DEFAULT_VIDEO_MAX_FRAMES,
        help="most frames sampled from one video_url; local video paths are readable only "
        "under the comma-separated MLXCEL_VIDEO_DIR_ALLOWLIST (read at startup), and http(s) "
        "media on non-public addresses only with MLXCEL_ALLOW_PRIVATE_MEDIA_URLS=1")


def media_policy(args: argparse.Namespace) -> MediaPolicy:
    return policy_from_settings(
        args.media_path, max_bytes=max(1, args.media_max_bytes),
        max_pixels=max(1, args.media_max_pixels),
        decode_timeout_s=max(0.001, args.media_decode_timeout),
        fetch_timeout_s=max(0.001, args.media_fetch_timeout),
        video_max_frames=max(2, args.video_max_frames),
    )


def add_engine_flags(p: argparse.ArgumentParser) -> None:
    """Slots, queue, prompt cache and observability flags."""
    add = p.add_argument
    add("-np", "--parallel", type=int, default=int(_env("LLAMA_ARG_N_PARALLEL", "4") or 4),
        help="number of parallel slots (continuous batching) [env LLAMA_ARG_N_PARALLEL]")
    add("--max-queue", type=int, default=int(_env("MLXCEL_MAX_QUEUE", "0") or 0),
        help="prefill queue capacity; beyond it requests get 503 (0 = 4 x --parallel) "
        "[env MLXCEL_MAX_QUEUE]")
    add("--prefill-step-size", type=int, default=256,
        help="prompt tokens per prefill chunk, interleaved with decoding")
    add("--no-cache-prompt", dest="cache_prompt", action="store_false",
        default=not _flag("LLAMA_ARG_NO_CACHE_PROMPT"),
        help="disable prompt-prefix reuse [env LLAMA_ARG_NO_CACHE_PROMPT]")
    add("--cache-bytes", type=int, default=DEFAULT_CAPACITY_BYTES,
        help="prompt cache capacity in bytes")
    add("--cache-entries", type=int, default=DEFAULT_MAX_ENTRIES,
        help="prompt cache capacity in entries")
    add("--cache-ttl", type=float, default=DEFAULT_TTL_S, help="prompt cache entry TTL, seconds")
    add("--metrics", action="store_true", default=_flag("LLAMA_ARG_ENDPOINT_METRICS"),
        help="serve Prometheus /metrics [env LLAMA_ARG_ENDPOINT_METRICS]")
    add("--metrics-port", type=int, default=None,
        help="also serve Prometheus metrics on this port (implies --metrics)")
    add("--slots", dest="slots", action="store_true",
        default=_env("LLAMA_ARG_ENDPOINT_SLOTS", "1") not in ("0", "false", "off"),
        help="serve /slots (default on) [env LLAMA_ARG_ENDPOINT_SLOTS]")
    add("--no-slots", dest="slots", action="store_false", help="do not serve /slots")
    add("--no-cpu-kernels", dest="cpu_kernels", action="store_false",
        default=_env("MLXCEL_CPU_KERNELS", "1") != "0",
        help="on MLX's CPU backend, keep mlx-lm's SwiGLU and decode attention instead of "
        "mlxcel's vectorized ones (bit-identical to mlx-lm, slower at large batches) "
        "[env MLXCEL_CPU_KERNELS=0]")
    add("--numpy-decode", action="store_true",
        default=_env("MLXCEL_NUMPY_DECODE", "0") == "1",
        help="on MLX's CPU backend (Linux), decode llama-family models with mlxcel's NumPy "
        "forward pass instead of MLX (a CPU kernel that bypasses MLX for prompt reading and "
        "decode steps; greedy tokens equal, logprobs within 1e-4; see benchmarks/README.md) "
        "[env MLXCEL_NUMPY_DECODE=1]")
    add("--stream-interval-ms", type=float,
        default=float(_env("MLXCEL_STREAM_INTERVAL_MS", "1") or 1),
        help="let a stream's tokens gather this long between socket writes (default 1; 0 "
        "sends each token as it is generated; the first token and the end go at once) "
        "[env MLXCEL_STREAM_INTERVAL_MS]")


SPEC_TYPES = ("none", "draft-simple", "ngram-simple", "prompt-lookup")


def add_speculative_flags(p: argparse.ArgumentParser) -> None:
    """Speculative decoding, with mlx-lm's and llama-server's flag names (docs/speculative.md)."""
    add = p.add_argument
    add("--draft-model", "-md", "--model-draft", "--spec-draft-model", dest="draft_model",
        default=_env("LLAMA_ARG_SPEC_DRAFT_MODEL", _env("LLAMA_ARG_MODEL_DRAFT")),
        help="draft model directory (sharing the model's tokenizer) for speculative decoding "
        "[env LLAMA_ARG_SPEC_DRAFT_MODEL]")
    add("--draft-max", "--num-draft-tokens", "--spec-draft-n-max", "--draft", "--draft-n",
        dest="draft_max", type=int,
        default=int(_env("LLAMA_ARG_SPEC_DRAFT_N_MAX", _env("LLAMA_ARG_DRAFT_MAX", "3")) or 3),
        help="tokens drafted per verify round (default 3; a request's num_draft_tokens wins) "
        "[env LLAMA_ARG_SPEC_DRAFT_N_MAX, LLAMA_ARG_DRAFT_MAX]")
    add("--spec-type", choices=SPEC_TYPES, default=_env("LLAMA_ARG_SPEC_TYPE", "none"),
        help="ngram-simple (alias prompt-lookup): prompt-lookup decoding, n-gram drafts from "
        "the prompt and the text so far, no second model; --draft-model takes precedence "
        "[env LLAMA_ARG_SPEC_TYPE]")


def engine_config(args: argparse.Namespace, config: ServerConfig) -> EngineConfig:
    engine = EngineConfig(
        model=config.model,
        ctx_size=config.ctx_size,
        parallel=max(1, args.parallel),
        prefill_step_size=max(1, args.prefill_step_size),
        max_queue=max(0, args.max_queue),
        cache_prompt=args.cache_prompt,
        cache_bytes=args.cache_bytes,
        cache_entries=args.cache_entries,
        cache_ttl_s=args.cache_ttl,
        media=media_policy(args),
        draft_model=config.draft_model,
        draft_max=max(0, args.draft_max),
        prompt_lookup=args.spec_type in ("ngram-simple", "prompt-lookup"),
        cpu_kernels=args.cpu_kernels,
        numpy_decode=args.numpy_decode,
        stream_interval_ms=max(0.0, args.stream_interval_ms),
    )
    # under mlx.launch: one request at a time, no prompt cache (see engine/distributed.py)
    return engine if sharding_group() is None else sharded_engine_config(engine)


def _refuse_unavailable_backends(parser: argparse.ArgumentParser,
                                 args: argparse.Namespace) -> None:
    """Fail at startup rather than claim a capability this build does not have."""
    if args.image_model:
        _check_image_flags(parser, args)
    if args.audio_model:
        others = [flag for flag, value in (("--model", args.model),
                                           ("--embedding-model", args.embedding_model),
                                           ("--rerank-model", args.rerank_model),
                                           ("--image-model", args.image_model)) if value]
        if others:
            parser.error(f"--audio-model starts an audio-only server; it cannot also load "
                         f"{', '.join(others)}")
        if args.audio_max_queue < 0 or args.audio_timeout <= 0:
            parser.error("--audio-max-queue must be >= 0 and --audio-timeout > 0")
        from .audio.checkpoints import checkpoint_problem

        problem = checkpoint_problem(args.audio_model)
        if problem:
            parser.error(f"--audio-model: {problem}")


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    defaults = GenerationDefaults(
        n_predict=args.n_predict,
        temperature=args.temp,
        top_p=args.top_p,
        top_k=args.top_k,
        min_p=args.min_p,
        seed=args.seed,
        repeat_penalty=args.repeat_penalty,
        repeat_last_n=args.repeat_last_n,
        frequency_penalty=args.frequency_penalty,
        presence_penalty=args.presence_penalty,
        dry_multiplier=args.dry_multiplier,
        dry_base=args.dry_base,
        dry_allowed_length=args.dry_allowed_length,
        dry_penalty_last_n=args.dry_penalty_last_n,
        xtc_probability=args.xtc_probability,
        xtc_threshold=args.xtc_threshold,
    )
    try:
        template_kwargs = parse_server_kwargs(args.chat_template_kwargs)
    except ValueError as exc:
        raise SystemExit(f"mlxcel-server: --chat-template-kwargs: {exc}") from None
    template = load_template_override(args.chat_template_file or args.chat_template)
    return ServerConfig(
        model=args.model or str(bundled_model_path()),
        host=args.host,
        port=args.port,
        api_key=args.api_key or None,
        ctx_size=args.ctx_size,
        alias=args.alias,
        defaults=defaults,
        parallel=max(1, args.parallel),
        metrics=bool(args.metrics or args.metrics_port),
        metrics_port=args.metrics_port,
        slots=args.slots,
        chat_template=template,
        chat_template_kwargs=template_kwargs,
        responses_store_max_entries=args.responses_store_max_entries,
        responses_store_ttl_secs=args.responses_store_ttl_secs,
        conversation_store_max_entries=args.conversation_store_max_entries,
        conversation_store_ttl_secs=args.conversation_store_ttl_secs,
        embedding_model=args.embedding_model or None,
        adapter_dir=args.adapter_dir or None,
        draft_model=args.draft_model or None,
        rerank_model=args.rerank_model or None,
        pooling=args.pooling,
        audio_model=args.audio_model or None,
        audio_max_queue=args.audio_max_queue,
        audio_timeout_s=args.audio_timeout,
        image_model=args.image_model or None,
        image_max_queue=args.image_max_queue,
        image_timeout_s=args.image_timeout,
        limits=request_limits(args),
        allowed_origins=_split(args.allowed_origins),
        allowed_hosts=_split(args.allowed_hosts),
        timeout_header_s=max(0.1, args.timeout_header),
        timeout_read_s=max(0.1, args.timeout_read),
        timeout_keep_alive_s=max(0.1, args.timeout_keep_alive),
        responses_store_max_bytes=max(0, args.responses_store_max_bytes),
    )


def main(argv: Sequence[str] | None = None) -> None:
    limit_malloc_arenas()  # before any thread starts (memory.py)
    parser = build_parser()
    args = parser.parse_args(argv)
    _refuse_unavailable_backends(parser, args)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = config_from_args(args)
    if is_follower():  # under mlx.launch, ranks other than 0 run their shard and no HTTP
        run_follower(config.model)
        return
    engine = Engine(engine_config(args, config))
    app = create_app(config, engine)
    if config.metrics_port:
        start_metrics_server(config.metrics_port, engine, config)
    raise_open_file_limit()
    server = uvicorn.Server(
        # asyncio and h11 even where uvicorn[standard] is installed: measured here, a single
        # stream decoded ~2.5x slower with httptools and ~4x with httptools + uvloop (the
        # loop thread holds the GIL the engine thread needs; benchmarks/README.md). The h11
        # protocol closes connections whose headers never finish (http_server.py).
        uvicorn.Config(app, host=config.host, port=config.port, log_level=args.log_level,
                       loop="asyncio", http=guarded_protocol(config.timeout_header_s),
                       timeout_keep_alive=max(1, round(config.timeout_keep_alive_s)))
    )

    def _fatal() -> None:
        server.should_exit = True

    engine.on_fatal = _fatal
    server.run()
    if engine.state == "failed":
        print(f"mlxcel-server: model failed to load: {engine.load_error}", file=sys.stderr)
        sys.exit(1)
