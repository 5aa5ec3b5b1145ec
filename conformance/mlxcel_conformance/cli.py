"""``mlxcel-conformance``: run the suite against a server URL (or the self-started reference).

    mlxcel-conformance --base-url http://127.0.0.1:8080 --profile mlx-lm --report reports/mlx-lm

Everything after the known options is passed to pytest (e.g. ``-k chat``, ``-x``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import pytest


def pytest_args(argv: Sequence[str]) -> list[str]:
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
