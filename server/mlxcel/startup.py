"""What stops the server before it serves, and how that is said.

``StartupError`` is the operator's problem, not a bug: ``mlxcel-server`` prints it as one line,
``mlxcel-server: error: MESSAGE`` (argparse's form for a bad flag), with no traceback unless
``--log-level debug``, and exits with status 2. A loader that knows a file cannot be served
raises a subclass (or ``StartupError`` itself) and is reported the same way, whether it runs
before the server starts or on the engine's loading thread (``Engine.load_exception``).

The checks here run before anything heavy is imported or loaded: a model path that does not
exist (a hub id is tried only for something shaped like one), an optional backend whose extra
is not installed, and the listening socket, bound before the model loads so that a taken or
forbidden port fails at once.
"""

from __future__ import annotations

import importlib.util
import logging
import re
import socket
import sys
import traceback
from pathlib import Path
from typing import NoReturn

PROG = "mlxcel-server"

# huggingface_hub's repo id rule (utils/_validators.py, validate_repo_id): one "/" between two
# names of letters, digits, "-", "_" and "."; not starting or ending with "-" or ".".
_HUB_NAME = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
HUB_ID = re.compile(f"{_HUB_NAME}/{_HUB_NAME}")


class StartupError(Exception):
    """A problem the operator must fix before the server can start (printed as one line)."""

    exit_status = 2


class ModelNotFound(StartupError):
    """A model path that does not exist and is no hub id."""


class MissingExtra(StartupError):
    """An optional backend whose dependencies are not installed."""

    def __init__(self, what: str, extra: str, then: str = "") -> None:
        install = f"pip install 'mlxcel[{extra}]'" + (f" && {then}" if then else "")
        super().__init__(f"{what} needs the {extra!r} extra, which is not installed: {install}")


class PortUnavailable(StartupError):
    """The address and port cannot be bound."""


def looks_like_hub_id(value: str) -> bool:
    return HUB_ID.fullmatch(value) is not None and not value.startswith(("./", "../", "~"))


def check_model_source(flag: str, value: str | None) -> None:
    """A local path must exist; anything else must be shaped like a hub id to be fetched."""
    if value is None or Path(value).expanduser().exists() or looks_like_hub_id(value):
        return
    raise ModelNotFound(f"{flag} {value}: no such file or directory (give a model directory, "
                        "a GGUF file or a hub id such as 'owner/name')")


def installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (``None`` in ``sys.modules``
    is Python's mark of a module that must not import)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    return importlib.util.find_spec(module) is not None


def require_module(module: str, what: str, extra: str, then: str = "") -> None:
    if not installed(module):
        raise MissingExtra(what, extra, then)


def listening_socket(host: str, port: int) -> socket.socket:
    """The server's socket, bound but not yet listening: connections are refused, as before,
    until the app has started.

    Its protocol is named, ``IPPROTO_TCP`` rather than the default 0: accepted connections
    inherit it, and asyncio turns Nagle's algorithm off (``TCP_NODELAY``) only on a socket
    whose ``proto`` says TCP. Left at 0, as uvicorn's own ``Config.bind_socket`` leaves it
    (https://github.com/Kludex/uvicorn/issues/3149), every streamed chunk written while the
    previous one is unacknowledged waits for the client's delayed ACK: on Linux the first
    chunk of each request after the first on a kept-alive connection came ~40 ms late."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except (OSError, OverflowError) as exc:
        sock.close()
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        where = f"[{host}]:{port}" if family == socket.AF_INET6 else f"{host}:{port}"
        raise PortUnavailable(f"cannot listen on {where}: {reason.lower().rstrip('.')} "
                              "(choose another --port or --host)") from None
    sock.set_inheritable(True)
    return sock


def report(error: BaseException, prefix: str = "") -> int:
    """Print a startup failure as one line (a traceback first under ``--log-level debug``);
    the exit status: 2 for a ``StartupError``, 1 for anything else."""
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        traceback.print_exception(type(error), error, error.__traceback__, file=sys.stderr)
    known = isinstance(error, StartupError)
    message = str(error) if known else f"{type(error).__name__}: {error}"
    first_line = (prefix + message).splitlines()[0] if message else prefix + type(error).__name__
    print(f"{PROG}: error: {first_line}", file=sys.stderr)
    sys.stderr.flush()
    return StartupError.exit_status if known else 1


def exit_on(error: BaseException, prefix: str = "") -> NoReturn:
    raise SystemExit(report(error, prefix))


class TracebackFilter(logging.Filter):
    """Drops the traceback uvicorn logs as a message when the app's startup fails (its
    lifespan's ``lifespan.startup.failed``), unless debug logging is on: the failure is
    reported in one line instead (``report``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if logging.getLogger().isEnabledFor(logging.DEBUG):
            return True
        return not str(record.msg).startswith(("Traceback (most recent call last)",
                                                "Application startup failed"))
