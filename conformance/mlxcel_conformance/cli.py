"""``mlxcel-conformance``: run the suite against a server URL (or the self-started reference).

    mlxcel-conformance --base-url http://127.0.0.1:8080 --profile mlx-lm --report reports/mlx-lm

Everything after the known options is passed to pytest (e.g. ``-k chat``, ``-x``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest

VALUE_OPTIONS = frozenset({
    "--base-url", "--api-key", "--model", "--profile", "--families", "--report", "--goldens",
    "--server-model", "--fuzz-examples", "--fail-on",
})


def join_values(argv: Sequence[str]) -> list[str]:
    """``--report DIR`` -> ``--report=DIR``: pytest guesses its rootdir from bare path-like
    arguments before plugins declare their options, and would take DIR for a test path."""
    out: list[str] = []
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in VALUE_OPTIONS and args:
            arg = f"{arg}={args.pop(0)}"
        out.append(arg)
    return out


def pytest_args(argv: Sequence[str]) -> list[str]:
    argv = join_values(argv)
    return [
        "-p", "mlxcel_conformance.plugin",
        "--pyargs", "mlxcel_conformance.tests",
        "-p", "no:cacheprovider",
        "-q",
        *argv,
    ]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    sys.exit(int(pytest.main(pytest_args(args))))


if __name__ == "__main__":
    main()
