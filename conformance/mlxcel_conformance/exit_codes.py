"""The exit statuses of ``mlxcel-conformance``: pytest's own (0-5) for a run that happened, and
one distinct status per setup mistake found before any check runs.

The setup statuses follow BSD's ``sysexits.h`` numbering (64 usage, 69 unavailable, 77 no
permission, 65 data error: https://man.freebsd.org/cgi/man.cgi?query=sysexits), so a script
can tell "the server failed checks" (1) from "the suite never ran" (64 and up).
"""

from __future__ import annotations

import enum


class SuiteExit(enum.IntEnum):
    """Why the suite stopped before its first check."""

    USAGE = 64  # unknown option, profile or family; a --base-url without a scheme
    NOT_LLM_SERVER = 65  # the URL answers, but 404 on every LLM route
    UNREACHABLE = 69  # nothing answers at --base-url (refused, unknown host, no answer)
    NEEDS_KEY = 77  # 401/403 on every LLM route: --api-key missing or refused


# (status, meaning), in the order --help and docs/testing.md list them.
EXIT_STATUSES: tuple[tuple[int, str], ...] = (
    (0, "every check ran and none FAILed (with --fail-on any: no ERROR either)"),
    (1, "a check FAILed, or (with --fail-on any) the suite's setup gave an ERROR"),
    (2, "interrupted (Ctrl-C)"),
    (3, "an internal error of the suite or of pytest"),
    (4, "pytest refused its own arguments"),
    (5, "no test selected (e.g. -k matched nothing)"),
    (SuiteExit.USAGE.value, "bad command line: unknown option, profile or family, or a "
     "--base-url without http:// or https://"),
    (SuiteExit.NOT_LLM_SERVER.value, "--base-url answers 404 on every LLM route: not an LLM "
     "server (or a wrong path in the URL)"),
    (SuiteExit.UNREACHABLE.value, "nothing answers at --base-url"),
    (SuiteExit.NEEDS_KEY.value, "the server requires a key (401/403 everywhere): pass "
     "--api-key, or the one passed was refused"),
)


def exit_status_help() -> str:
    """The table of exit statuses, as ``--help`` prints it."""
    return "\n".join(f"  {status:>3}  {meaning}" for status, meaning in EXIT_STATUSES)
