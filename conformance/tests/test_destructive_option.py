"""``--destructive``: the tests whose bad input can crash a weak server run last by default; the
peers run on a real model skips them in the suite processes that share a server at once and
runs them alone afterwards (``--destructive skip``, then ``only``), so a crash they cause fails
no other process's features."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ("pytester",)

_TESTS = '''
import pytest

@pytest.mark.conformance(family="chat", feature="chat.leaves", destructive="last")
def test_leaves():
    pass

@pytest.mark.conformance(family="chat", feature="chat.bad_input", destructive=True)
def test_bad_input():
    pass

@pytest.mark.conformance(family="chat", feature="chat.plain")
def test_plain():
    pass
'''


def _features(pytester: pytest.Pytester, *args: str) -> list[str]:
    pytester.makepyfile(test_cases=_TESTS)
    report = pytester.path / "report"
    pytester.runpytest_inprocess("-q", "-p", "mlxcel_conformance.plugin", "-p",
                                 "no:cacheprovider", "--profile=mlx-lm", f"--report={report}",
                                 *args)
    doc = json.loads((report / "conformance.json").read_text())
    return [r["feature"] for r in doc["records"]]


@pytest.mark.parametrize(("mode", "features"), [
    ([], ["chat.plain", "chat.bad_input", "chat.leaves"]),  # all, the destructive ones last
    (["--destructive=skip"], ["chat.plain"]),
    (["--destructive=only"], ["chat.bad_input", "chat.leaves"]),
])
def test_destructive_tests_last_skipped_or_alone(pytester: pytest.Pytester, mode: list[str],
                                                 features: list[str]) -> None:
    assert _features(pytester, *mode) == features
