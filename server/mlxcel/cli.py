"""``mlxcel-server``: the command line made from the settings (``settings/``, llama-server's
flag names and LLAMA_ARG_* variables), the checks only startup can make, and the serving."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Mapping, Sequence

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
from .engine.worker import Engine, EngineConfig
from .http_server import guarded_protocol, raise_open_file_limit
from .limits import RequestLimits
from .media.policy import MediaPolicy, policy_from_settings
from .memory import keep_freed_memory, limit_malloc_arenas
from .observability import start_metrics_server
from .settings.catalog import OPTIONS
from .settings.derive import values
from .settings.parser import build


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The command line, made from the settings (``settings/``); ``environ`` (default: the
    process's) supplies the ``LLAMA_ARG_*`` and ``MLXCEL_*`` variables."""
    parser = build(OPTIONS, prog="mlxcel-server", environ=environ,
                   usage="%(prog)s [-m MODEL] [--host HOST] [--port PORT] [OPTION ...]",
                   description="The mlxcel reference MLX inference server: OpenAI Chat "
                   "Completions, Completions and Responses, Anthropic Messages and llama-server's "
                   "native routes.")
    parser.add_argument("--version", action="version", version=f"mlxcel-server {__version__}")
    return parser


def request_limits(args: argparse.Namespace) -> RequestLimits:
    return RequestLimits(**values(args, "limits"))


def media_policy(args: argparse.Namespace) -> MediaPolicy:
    return policy_from_settings(**values(args, "media"))


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


def engine_config(args: argparse.Namespace, config: ServerConfig) -> EngineConfig:
    engine = EngineConfig(
        model=config.model,
        ctx_size=config.ctx_size,
        media=media_policy(args),
        draft_model=config.draft_model,
        prompt_lookup=args.spec_type in ("ngram-simple", "prompt-lookup"),
        **values(args, "engine"),
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
    try:
        template_kwargs = parse_server_kwargs(args.chat_template_kwargs)
    except ValueError as exc:
        raise SystemExit(f"mlxcel-server: --chat-template-kwargs: {exc}") from None
    server = values(args, "server")
    server.update(
        model=server["model"] or str(bundled_model_path()),
        metrics=bool(server["metrics"] or server["metrics_port"]),
        parallel=values(args, "engine")["parallel"],
        chat_template=load_template_override(args.chat_template_file or args.chat_template),
        chat_template_kwargs=template_kwargs,
        defaults=GenerationDefaults(**values(args, "defaults")),
        limits=request_limits(args),
    )
    return ServerConfig(**server)


def _refuse_unservable_gguf(model: str) -> None:
    """A GGUF file the server cannot serve stops it here with one line, before anything loads."""
    from .engine.gguf import UnsupportedGGUF, check_gguf, is_gguf_path

    if is_gguf_path(model):
        try:
            check_gguf(model)
        except UnsupportedGGUF as exc:
            raise SystemExit(f"mlxcel-server: cannot serve {exc}") from None


def main(argv: Sequence[str] | None = None) -> None:
    limit_malloc_arenas()  # before any thread starts (memory.py)
    keep_freed_memory()
    parser = build_parser()
    args = parser.parse_args(argv)
    _refuse_unavailable_backends(parser, args)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = config_from_args(args)
    _refuse_unservable_gguf(config.model)
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
    try:
        server.run()
    except SystemExit as failed:  # uvicorn's startup failure (e.g. an image model that fails)
        # The engine thread may still be inside MLX loading the text model; finalizing the
        # interpreter around it aborts the process ("terminate called ..."), so leave at once.
        engine.stop()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(failed.code if isinstance(failed.code, int) else 1)
    if engine.state == "failed":
        print(f"mlxcel-server: model failed to load: {engine.load_error}", file=sys.stderr)
        sys.exit(1)
