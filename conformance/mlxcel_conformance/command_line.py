"""The command line checked before pytest sees it: a typo in an option, a profile, a family or
a choice gives one line with the valid choices (pytest would print its own usage as
``pytest.main()``, or 22 lines of ``INTERNALERROR``), and ``--base-url`` is checked and probed
(``preflight``).

Every problem is a ``PreflightError`` with ``SuiteExit.USAGE`` (or the probe's own status).
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .errors import SetupError
from .exit_codes import SuiteExit
from .preflight import PreflightError, checked_base_url, probe_target
from .profiles import FAMILIES, PROFILES, get_profile

Options = list[tuple[tuple[str, ...], dict[str, Any]]]
# The CLI's own flags, handled before pytest runs.
CLI_FLAGS = frozenset({"-h", "--help", "--help-pytest", "--version"})


def _option_names_here() -> frozenset[str]:
    """Every long option pytest accepts in this process: its own, its installed plugins', the
    suite's. pytest has no public listing of its options: this builds its config the way
    ``pytest.main`` does, without parsing or running anything."""
    from _pytest.config import get_config

    config = get_config()
    config.pluginmanager.load_setuptools_entrypoints("pytest11")
    config.pluginmanager.import_plugin("mlxcel_conformance.plugin")
    parser = config._parser
    groups = [parser._anonymous, *parser._groups]
    return frozenset(name for group in groups for option in group.options
                     for name in option.names() if name.startswith("--"))


def _pytest_option_names() -> frozenset[str] | None:
    """``_option_names_here`` from a child process (loading pytest's plugins here would import
    them before ``pytest.main`` can rewrite their asserts), or None when that fails: then only
    near-misses of the suite's own options are refused."""
    try:
        done = subprocess.run([sys.executable, "-m", __name__], capture_output=True, text=True,
                              timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return frozenset(done.stdout.split())


def _usage(message: str) -> PreflightError:
    return PreflightError(SuiteExit.USAGE, message)


def check_option_names(args: Sequence[str], suite: Options,
                       pytest_names: Callable[[], frozenset[str] | None] = _pytest_option_names,
                       ) -> None:
    """Refuse a long option that neither the suite nor pytest knows, naming the closest."""
    ours = {name for names, _ in suite for name in names if name.startswith("--")}
    known: frozenset[str] | None = None
    looked_up = False
    for arg in args:
        if arg == "--":
            break
        name = arg.split("=", 1)[0]
        if not name.startswith("--") or name in ours or name in CLI_FLAGS:
            continue
        if not looked_up:
            known, looked_up = pytest_names(), True
        close = difflib.get_close_matches(name, sorted(ours), n=1, cutoff=0.75)
        if (name in known) if known is not None else not close:
            continue
        hint = f"; did you mean {close[0]}?" if close else ""
        raise _usage(f"unknown option {name}{hint} (mlxcel-conformance --help lists the "
                     "suite's options, --help-pytest pytest's)")


def _values(args: Sequence[str]) -> dict[str, str]:
    """``--name=value`` arguments (the CLI joins ``--name value`` first), the last one wins."""
    found: dict[str, str] = {}
    for arg in args:
        if arg == "--":
            break
        if arg.startswith("--") and "=" in arg:
            name, value = arg.split("=", 1)
            found[name] = value
    return found


def check_option_values(args: Sequence[str], suite: Options) -> None:
    """Refuse an unknown profile or family, a value outside an option's choices, or a number
    that is not one."""
    values = _values(args)
    if "--profile" in values and values["--profile"] not in PROFILES:
        raise _usage(f"unknown profile {values['--profile']!r}; choose one of "
                     f"{', '.join(PROFILES)}")
    if "--families" in values:
        try:
            get_profile("mlxcel").narrowed(f.strip() for f in values["--families"].split(","))
        except SetupError:
            unknown = [f.strip() for f in values["--families"].split(",")
                       if f.strip() not in FAMILIES]
            raise _usage(f"unknown family {', '.join(unknown) or repr('')} in --families; "
                         f"choose from {', '.join(FAMILIES)}") from None
    for names, attrs in suite:
        value = values.get(names[0])
        if value is None:
            continue
        choices = attrs.get("choices")
        if choices and value not in choices:
            raise _usage(f"{names[0]} {value!r}: choose one of {', '.join(choices)}")
        kind = attrs.get("type")
        if kind in (int, float):
            try:
                kind(value)
            except ValueError:
                raise _usage(f"{names[0]} {value!r}: not a number") from None
    if "--passes" in values and int(values["--passes"]) < 1:
        raise _usage(f"--passes {values['--passes']!r}: run at least one pass")


def checked_arguments(args: list[str], suite: Callable[[], Options],
                      probe: bool = True) -> list[str]:
    """``args`` (joined: ``--name=value``) after every check; ``--base-url`` rewritten when
    its ``/v1`` was dropped (the note is printed here). ``probe`` sends the preflight
    requests to the URL. The URL goes first: ``suite`` (the plugins' options) imports the
    whole suite, SDKs included, which an unreachable URL need not wait for."""
    given = _values(args).get("--base-url")
    if given is not None:
        target = checked_base_url(given)
        if target.note:
            print(target.note)
        if probe:
            probe_target(target.url, _values(args).get("--api-key"))
        args = [f"--base-url={target.url}" if a.split("=", 1)[0] == "--base-url" else a
                for a in args]
    options = suite()
    check_option_names(args, options)
    check_option_values(args, options)
    return args

if __name__ == "__main__":
    print("\n".join(sorted(_option_names_here())))
