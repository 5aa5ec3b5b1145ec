"""`--fail-on fail`: the exit status is non-zero only for FAIL verdicts, not for ERROR (the
suite's own setup faults) nor for families outside the profile."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytester",)

_TESTS = '''
import pytest
from mlxcel_conformance.errors import ConformanceFailure, SetupError

@pytest.mark.conformance(family="chat", feature="setup-fault")
def test_setup_fault():
    raise SetupError("the suite could not reach its own fixture")

@pytest.mark.conformance(family="responses", feature="unclaimed")
def test_unclaimed():
    raise ConformanceFailure("some_check", "never runs under the mlx-lm profile")

@pytest.mark.conformance(family="chat", feature="server-fault")
def test_server_fault():
    if FAIL:
        raise ConformanceFailure("some_check", "the server broke the spec")
'''


def _run(pytester: pytest.Pytester, *, fail: bool, fail_on: str) -> int:
    pytester.makepyfile(test_cases=f"FAIL = {fail}\n" + _TESTS)
    result = pytester.runpytest_inprocess(
        "-q", "-p", "mlxcel_conformance.plugin", "-p", "no:cacheprovider",
        "--profile=mlx-lm", f"--fail-on={fail_on}",
    )
    result.stdout.fnmatch_lines(["*mlxcel-conformance:*"])
    return int(result.ret)


@pytest.mark.parametrize(
    ("fail", "fail_on", "expected"),
    [
        (False, "fail", 0),  # only an ERROR and an UNSUPPORTED family: passes
        (True, "fail", 1),  # a FAIL in a claimed family
        (False, "any", 1),  # default: pytest's status, ERROR counts
    ],
)
def test_exit_status(pytester: pytest.Pytester, fail: bool, fail_on: str, expected: int) -> None:
    assert _run(pytester, fail=fail, fail_on=fail_on) == expected
