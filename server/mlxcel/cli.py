"""``mlxcel-server``: the command line made from the settings (``settings/``, llama-server's
flag names and LLAMA_ARG_* variables), the checks only startup can make, and the serving."""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from . import __version__
from .chat.template_kwargs import parse_server_kwargs
from .config import GenerationDefaults, ServerConfig
from .limits import RequestLimits
from .media.policy import MediaPolicy, policy_from_settings
from .memory import keep_freed_memory, limit_malloc_arenas
from .settings.catalog import OPTIONS
from .settings.derive import sections, values
from .settings.parser import build
from .startup import (
    StartupError,
    TracebackFilter,
    check_model_source,
    exit_on,
    listening_socket,
    report,
    require_module,
)

if TYPE_CHECKING:
    from .engine.worker import Engine, EngineConfig

# MLX, mlx-lm, uvicorn and the app are imported once the socket is bound (main below): a port
# that cannot be bound is reported within a second, not after seconds of imports.


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
    from .families.images.checkpoint import ImageCheckpointError, check_layout
    from .families.images.zimage import ImageBackendMissing, require_mflux

    if args.image_max_queue < 0 or args.image_timeout <= 0:
        parser.error("--image-max-queue must be >= 0 and --image-timeout > 0")
    try:
        check_layout(args.image_model)
        require_mflux()
    except (ImageCheckpointError, ImageBackendMissing) as exc:
        parser.error(f"--image-model: {exc}")


def engine_config(args: argparse.Namespace, config: ServerConfig) -> EngineConfig:
    from .engine.distributed import sharded_engine_config, sharding_group
    from .engine.worker import EngineConfig

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
        from .families.audio.checkpoints import checkpoint_problem

        problem = checkpoint_problem(args.audio_model)
        if problem:
            parser.error(f"--audio-model: {problem}")


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    from .bundled import bundled_model_path
    from .chat.template import load_template_override

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
        sections=sections(args),
    )
    return ServerConfig(**server)


def _check_sources(args: argparse.Namespace) -> None:
    """What can be known of the model flags without loading anything."""
    for flag, value in (("--model", args.model), ("--draft-model", args.draft_model),
                        ("--embedding-model", args.embedding_model),
                        ("--rerank-model", args.rerank_model)):
        check_model_source(flag, value)
    if args.embedding_model or args.rerank_model:
        flag = "--embedding-model" if args.embedding_model else "--rerank-model"
        require_module("mlx_embeddings", flag, "embeddings")


def _check_vision(model: str) -> None:
    from .engine.vision import is_vision_checkpoint

    if is_vision_checkpoint(model):
        require_module("mlx_vlm", f"{model} (a vision-language checkpoint)", "vision")


def _check_gguf(model: str) -> None:
    """A GGUF file the server cannot serve stops it here, before anything loads
    (``UnsupportedGGUF`` is a ``StartupError``)."""
    from .engine.gguf import check_gguf, is_gguf_path

    if is_gguf_path(model):
        check_gguf(model)


def _is_follower() -> bool:
    """A rank other than 0 under mlx.launch: it serves no HTTP, so it binds no port. (MLX's
    group alone, without importing mlx-lm as engine/distributed.py's is_follower does.)"""
    import mlx.core as mx

    if not mx.distributed.is_available():
        return False
    group = mx.distributed.init()
    return group.size() > 1 and group.rank() != 0


def main(argv: Sequence[str] | None = None) -> None:
    limit_malloc_arenas()  # before any thread starts (memory.py)
    keep_freed_memory()
    parser = build_parser()
    args = parser.parse_args(argv)
    _refuse_unavailable_backends(parser, args)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        _check_sources(args)
        sock = None if _is_follower() else listening_socket(args.host, args.port)
        # --metrics-port: a second socket of the same server and app (observability.py)
        sockets = [] if sock is None else [sock]
        if sock is not None and args.metrics_port:
            sockets.append(listening_socket(args.host, args.metrics_port))
        config = config_from_args(args)
        _check_vision(config.model)
        _check_gguf(config.model)
    except StartupError as error:
        exit_on(error)
    if sock is None:
        from .engine.distributed import run_follower

        run_follower(config.model)
        return
    _serve(args, config, sockets)


def _serve(args: argparse.Namespace, config: ServerConfig,
           sockets: list[socket.socket]) -> None:
    import uvicorn

    from .app import create_app
    from .engine.worker import Engine
    from .http_server import connection_cap, gauged, guarded_protocol, raise_open_file_limit
    from .shutdown import GracefulServer

    engine = Engine(engine_config(args, config))
    app = create_app(config, engine)
    open_file_limit = raise_open_file_limit()
    max_connections = connection_cap(config.max_connections, open_file_limit)
    sockets = [gauged(sock, open_file_limit) for sock in sockets]
    server = GracefulServer(
        # asyncio and h11 even where uvicorn[standard] is installed: measured here, a single
        # stream decoded ~2.5x slower with httptools and ~4x with httptools + uvloop (the
        # loop thread holds the GIL the engine thread needs; benchmarks/README.md). The h11
        # protocol closes connections whose headers never finish (http_server.py).
        uvicorn.Config(app, host=config.host, port=config.port, log_level=args.log_level,
                       loop="asyncio",
                       http=guarded_protocol(config.timeout_header_s, max_connections,
                                             engine.config.stream_stall_timeout_s),
                       timeout_keep_alive=max(1, round(config.timeout_keep_alive_s))),
        engine, app.state.mlxcel.admission, config.shutdown_grace_s,
    )

    def _fatal() -> None:
        server.should_exit = True

    engine.on_fatal = _fatal
    logging.getLogger("uvicorn.error").addFilter(TracebackFilter())
    host, port = sockets[0].getsockname()[:2]
    # uvicorn names the address only for a socket it binds itself
    logging.getLogger("mlxcel").info("bound to http://%s:%d",
                                     f"[{host}]" if ":" in host else host, port)
    try:
        server.run(sockets=sockets)
    except SystemExit as failed:  # uvicorn's startup failure (e.g. an image model that fails)
        # The engine thread may still be inside MLX loading the text model; finalizing the
        # interpreter around it aborts the process ("terminate called ..."), so leave at once.
        engine.stop()
        code = failed.code if isinstance(failed.code, int) else 1
        error = getattr(app.state, "startup_error", None)
        if isinstance(error, Exception):
            code = report(error, prefix="" if isinstance(error, StartupError)
                          else "startup failed: ")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    _report_load_failure(engine)


def _report_load_failure(engine: Engine) -> None:
    if engine.state != "failed":
        return
    error = engine.load_exception
    if isinstance(error, StartupError):
        exit_on(error)
    exit_on(error or RuntimeError(engine.load_error), prefix="model failed to load: ")
