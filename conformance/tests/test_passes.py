"""``--passes N`` runs the selected tests N times against one server into one report: session
fixtures stay up across passes, each pass after the first fuzzes with its own seed, the
between-pass callbacks run after every pass but the last, and a FAIL in any pass is the
feature's verdict."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ("pytester",)

_TESTS = '''
import pytest

from mlxcel_conformance.passes import after_each_pass, current_pass, fuzz_seed

EVENTS = []


@pytest.fixture(scope="session")
def server(pytestconfig):
    EVENTS.append("up")
    after_each_pass(pytestconfig, lambda index: EVENTS.append(f"between {index}"))
    yield
    EVENTS.append("down")
    print("EVENTS", EVENTS)


@pytest.fixture
def each():
    EVENTS.append("set up")
    yield
    EVENTS.append("torn down")


def test_first(server, each, pytestconfig):
    EVENTS.append(f"first pass {current_pass(pytestconfig)} seed {fuzz_seed(pytestconfig)}")


def test_second(server, pytestconfig):
    EVENTS.append(f"second pass {current_pass(pytestconfig)}")
'''

_MERGED = '''
import pytest

from mlxcel_conformance.passes import current_pass


@pytest.mark.conformance(family="chat", feature="chat.plain")
def test_plain(pytestconfig):
    assert current_pass(pytestconfig) == 0, "broke in a later pass"
'''


def _events(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, list[str]]:
    pytester.makepyfile(test_cases=_TESTS)
    result = pytester.runpytest_inprocess("-s", "-p", "mlxcel_conformance.passes",
                                          "-p", "no:cacheprovider", *args)
    line = next(line for line in result.outlines if "EVENTS" in line)
    return result, eval(line.split("EVENTS", 1)[1])  # noqa: S307 (the list printed above)


def test_three_passes_share_the_session_and_draw_new_seeds(pytester: pytest.Pytester) -> None:
    result, events = _events(pytester, "--passes", "3")
    result.assert_outcomes(passed=6)
    first = ["set up", "first pass {} seed {}", "torn down"]
    assert events == ["up", *_pass(first, 0, None), "second pass 0", "between 0",
                      *_pass(first, 1, 1), "second pass 1", "between 1",
                      *_pass(first, 2, 2), "second pass 2", "down"]


def _pass(events: list[str], index: int, seed: int | None) -> list[str]:
    return [event.format(index, seed) for event in events]


def test_a_pass_of_one_test_sets_it_up_again(pytester: pytest.Pytester) -> None:
    result, events = _events(pytester, "--passes", "2", "-k", "first")
    result.assert_outcomes(passed=2)
    assert events == ["up", "set up", "first pass 0 seed None", "torn down", "between 0",
                      "set up", "first pass 1 seed 1", "torn down", "down"]


def test_one_pass_is_pytests_own_loop(pytester: pytest.Pytester) -> None:
    result, events = _events(pytester)
    result.assert_outcomes(passed=2)
    assert events == ["up", "set up", "first pass 0 seed None", "torn down", "second pass 0",
                      "down"]


def test_exitfirst_stops_every_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cases="def test_a():\n    assert False\n\n"
                                   "def test_b():\n    pass\n")
    result = pytester.runpytest_inprocess("-x", "-p", "mlxcel_conformance.passes",
                                          "-p", "no:cacheprovider", "--passes", "3")
    result.assert_outcomes(failed=1)


def test_a_fail_in_a_later_pass_is_the_features_verdict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_cases=_MERGED)
    report = pytester.path / "report"
    pytester.runpytest_inprocess("-q", "-p", "mlxcel_conformance.plugin", "-p",
                                 "no:cacheprovider", "--passes", "2", f"--report={report}")
    records = json.loads((report / "conformance.json").read_text())["records"]
    assert [(r["feature"], r["verdict"]) for r in records] == [("chat.plain", "FAIL")]
    assert "broke in a later pass" in records[0]["message"]
