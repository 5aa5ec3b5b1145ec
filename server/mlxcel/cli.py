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
from .config import GenerationDefaults, ServerConfig
from .engine.distributed import is_follower, run_follower
from .engine.worker import Engine, EngineConfig


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(name, default)


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
    add("--log-level", default=_env("MLXCEL_LOG_LEVEL", "info"),
        choices=["debug", "info", "warning", "error"])
    return p


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
    )
    return ServerConfig(
        model=args.model or str(bundled_model_path()),
        host=args.host,
        port=args.port,
        api_key=args.api_key or None,
        ctx_size=args.ctx_size,
        alias=args.alias,
        defaults=defaults,
    )


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    config = config_from_args(args)
    if is_follower():  # under mlx.launch, ranks other than 0 run their shard and no HTTP
        run_follower(config.model)
        return
    engine = Engine(EngineConfig(model=config.model, ctx_size=config.ctx_size))
    app = create_app(config, engine)
    server = uvicorn.Server(
        uvicorn.Config(app, host=config.host, port=config.port, log_level=args.log_level)
    )

    def _fatal() -> None:
        server.should_exit = True

    engine.on_fatal = _fatal
    server.run()
    if engine.state == "failed":
        print(f"mlxcel-server: model failed to load: {engine.load_error}", file=sys.stderr)
        sys.exit(1)
