"""``mlxcel-conformance``: run the suite against a server URL (or the self-started reference).

    mlxcel-conformance --base-url http://127.0.0.1:8080 --profile mlx-lm --report reports/mlx-lm

Everything after the known options is passed to pytest (e.g. ``-k chat``, ``-x``).
``--help`` prints the suite's own options; ``--help-pytest`` prints pytest's full help;
``--version`` the suite's version. Before pytest runs, the command line and ``--base-url`` are
checked (``command_line``, ``preflight``): a setup mistake is one ERROR line and its own exit
status (``exit_codes``). By default a FAIL is one line (pytest runs with ``--tb=no``); ``-v``,
``--tb=...`` or ``-r...`` bring pytest's own reporting back.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from . import __version__
from .command_line import checked_arguments
from .exit_codes import exit_status_help
from .preflight import PreflightError

VALUE_OPTIONS = frozenset({
    "--base-url", "--api-key", "--model", "--profile", "--families", "--report", "--goldens",
    "--server-model", "--fuzz-examples", "--fail-on", "--fixture-dir", "--request-timeout",
    "--health-budget-ms", "--stall-bound", "--server-pid", "--rss-tolerance", "--destructive",
    "--passes",
})
HELP_FLAGS = frozenset({"-h", "--help"})
PYTEST_HELP_FLAG = "--help-pytest"
VERSION_FLAG = "--version"
# pytest's own reporting, asked for: then the CLI leaves pytest's output as it is.
_REPORTING_FLAGS = ("-v", "--verbose", "--tb", "-r", "-q", "--quiet")
# The default: progress dots, one line per FAIL and the suite's summary (the plugin's).
QUIET_ARGS = ("-qq", "--tb=no", "-rN")

USAGE = """\
usage: mlxcel-conformance [OPTIONS] [PYTEST ARGS ...]

Check an LLM inference server against the mlxcel OpenAPI spec, golden transcripts and the
public API contracts, and print a feature matrix (PASS / FAIL, one per defect / UNSUPPORTED /
ERROR / LENIENT / INCONCLUSIVE).

  mlxcel-conformance --base-url http://127.0.0.1:8080 --profile llama-server --report reports/ls
"""

EPILOG = """\
Any other argument goes to pytest (-k EXPR, -x, --maxfail N). A FAIL prints one line (check,
source, evidence); -v or --tb=short print pytest's tracebacks too; --report DIR keeps it all.
  -h, --help      this help
  --help-pytest   pytest's full help (its own options, then these again)
  --version       the suite's version

exit status:
"""


@dataclass
class _Recorder:
    """Stands in for pytest's parser and option group: records each ``addoption``."""

    options: list[tuple[tuple[str, ...], dict[str, Any]]] = field(default_factory=list)

    def getgroup(self, name: str, description: str = "") -> _Recorder:
        return self

    def addoption(self, *names: str, **attrs: Any) -> None:
        self.options.append((names, attrs))


def suite_options() -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """The options the suite's pytest plugin declares, in its order."""
    from . import passes, robustness_plugin
    from .plugin import pytest_addoption

    recorder = _Recorder()
    pytest_addoption(recorder)  # type: ignore[arg-type]
    robustness_plugin.pytest_addoption(recorder)  # type: ignore[arg-type]
    passes.pytest_addoption(recorder)  # type: ignore[arg-type]
    return recorder.options


def _option_line(names: tuple[str, ...], attrs: dict[str, Any]) -> str:
    if attrs.get("action") in ("store_true", "store_false"):
        return ", ".join(names)
    choices = attrs.get("choices")
    value = "|".join(choices) if choices else attrs.get("metavar", "VALUE")
    return f"{', '.join(names)} {value}"


def short_help() -> str:
    lines = [USAGE, "options:"]
    for names, attrs in suite_options():
        lines.append(f"  {_option_line(names, attrs)}")
        lines += textwrap.wrap(attrs.get("help", ""), width=92, initial_indent=" " * 6,
                               subsequent_indent=" " * 6)
    return "\n".join([*lines, "", EPILOG + exit_status_help()])


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


def _reporting_asked(argv: Sequence[str]) -> bool:
    return any(arg.startswith(_REPORTING_FLAGS) and not arg.startswith("--report")
               for arg in argv if arg != "--")


def pytest_args(argv: Sequence[str]) -> list[str]:
    argv = ["--help" if arg == PYTEST_HELP_FLAG else arg for arg in join_values(argv)]
    reporting = ["-q"] if _reporting_asked(argv) or "--help" in argv else list(QUIET_ARGS)
    return [
        "-p", "mlxcel_conformance.plugin",
        "--pyargs", "mlxcel_conformance.tests",
        "-p", "no:cacheprovider",
        # The CLI has imported the plugin (and through the SDKs, anyio) to check the command
        # line: pytest can no longer rewrite their few asserts, which only costs messages.
        "-W", "ignore::pytest.PytestAssertRewriteWarning",
        *reporting,
        *argv,
    ]


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if HELP_FLAGS & set(args) and PYTEST_HELP_FLAG not in args:
        print(short_help())
        sys.exit(0)
    if VERSION_FLAG in args:
        print(f"mlxcel-conformance {__version__} (pytest {pytest.__version__})")
        sys.exit(0)
    if PYTEST_HELP_FLAG not in args:
        try:
            args = checked_arguments(join_values(args), suite_options)
        except PreflightError as exc:
            print(f"ERROR: {exc}", file=sys.stderr)
            sys.exit(int(exc.exit_status))
    sys.exit(int(pytest.main(pytest_args(args))))


if __name__ == "__main__":
    main()
