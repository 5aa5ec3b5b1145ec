"""``mlxcel-conformance`` as the ``mlxcel`` distribution installs it.

There the suite's own dependencies (pytest, schemathesis, the official SDKs) are the
``conformance`` extra, so that the server alone stays light; without them this says, in one
line, what to install instead of failing with an ``ImportError``. The suite's own distribution
(``conformance/pyproject.toml``) requires them and starts ``cli.main`` directly.
"""

from __future__ import annotations

import importlib.util
import sys

# the import names of the suite's dependencies that the server does not need
SUITE_MODULES = ("pytest", "hypothesis", "schemathesis", "openai", "anthropic")


def missing_modules() -> list[str]:
    """Those of ``SUITE_MODULES`` that cannot be imported (``None`` in ``sys.modules`` is
    Python's mark of a module that must not import), found without importing them."""
    return [name for name in SUITE_MODULES
            if (sys.modules[name] is None if name in sys.modules
                else importlib.util.find_spec(name) is None)]


def main() -> None:
    missing = missing_modules()
    if missing:
        print(f"mlxcel-conformance: error: the suite's dependencies are not installed "
              f"({', '.join(missing)}): pip install 'mlxcel[conformance]' (or the suite alone, "
              "from a checkout: pip install ./conformance)", file=sys.stderr)
        raise SystemExit(2)
    from .cli import main as run_suite

    run_suite()
