"""`--fail-on fail`: the exit status is non-zero only for FAIL verdicts, not for ERROR (the
suite's own setup faults) nor for families outside the profile."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ("pytester",)

_TESTS = '''
import json

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


_FINDINGS = '''
import json

import pytest
from mlxcel_conformance.checks.registry import inconclusive, lenient

@pytest.mark.conformance(family="chat", feature="chat.errors.invalid_body")
def test_lenient():
    lenient("error_status", "HTTP 200 for a request the API rejects with 400 (messages_empty)")

@pytest.mark.conformance(family="chat", feature="chat.structured.json_schema")
def test_inconclusive():
    inconclusive("structured_output_valid", "the answer was cut by max_tokens")

@pytest.mark.conformance(family="chat", feature="chat.json.body")
def test_pass():
    pass
'''


def _run_findings(pytester: pytest.Pytester, tests: str, fail_on: str) -> pytest.RunResult:
    """``tests`` run under the plugin (profile mlx-lm), the report written to ``out``."""
    pytester.makepyfile(test_findings=tests)
    return pytester.runpytest_inprocess(
        "-q", "-p", "mlxcel_conformance.plugin", "-p", "no:cacheprovider", "--tb=no",
        "--profile=mlx-lm", f"--fail-on={fail_on}", f"--report={pytester.path / 'out'}")


@pytest.mark.parametrize("fail_on", ["any", "fail"])
def test_lenient_and_inconclusive_are_verdicts_and_no_failure(
        pytester: pytest.Pytester, fail_on: str) -> None:
    """docs/conformance/verdicts.md: each is a row, a count and a terminal line of its own,
    and neither makes the run fail."""
    result = _run_findings(pytester, _FINDINGS, fail_on)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "LENIENT chat chat.errors.invalid_body [[]error_status[]] HTTP 200 *",
        "INCONCLUSIVE chat chat.structured.json_schema [[]structured_output_valid[]] the answer*",
        "mlxcel-conformance: 1 PASS, 0 FAIL, 0 UNSUPPORTED, 0 ERROR, 1 LENIENT, 1 INCONCLUSIVE *",
    ])
    data = json.loads((pytester.path / "out" / "conformance.json").read_text())
    verdicts = {r["feature"]: (r["verdict"], r["checks"], r["message"]) for r in data["records"]}
    assert verdicts["chat.errors.invalid_body"] == (
        "LENIENT", ["error_status"],
        "HTTP 200 for a request the API rejects with 400 (messages_empty)")
    assert verdicts["chat.structured.json_schema"][:2] == (
        "INCONCLUSIVE", ["structured_output_valid"])
    html = (pytester.path / "out" / "conformance.html").read_text()
    assert 'class="v LENIENT"' in html and 'class="v INCONCLUSIVE"' in html


_TIMEOUT = '''
import socket

import httpx
import pytest

@pytest.mark.conformance(family="chat", feature="chat.max_tokens")
def test_unanswered():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    try:
        httpx.post(f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions",
                   json={}, timeout=httpx.Timeout(0.2, connect=2.0))
    finally:
        listener.close()
'''


@pytest.mark.parametrize("fail_on", ["any", "fail"])
def test_a_request_the_suite_stopped_waiting_for_is_inconclusive(
        pytester: pytest.Pytester, fail_on: str) -> None:
    """No public rule sets a time limit: a ReadTimeout is INCONCLUSIVE and no failure of the
    run (issue 39: a slow peer's timeouts were FAILs citing RFC 9110)."""
    result = _run_findings(pytester, _TIMEOUT, fail_on)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "INCONCLUSIVE chat chat.max_tokens [[]ReadTimeout[]] ReadTimeout: no answer within 0.2 s*",
        "mlxcel-conformance: 0 PASS, 0 FAIL, 0 UNSUPPORTED, 0 ERROR, 0 LENIENT, 1 INCONCLUSIVE *",
    ])
