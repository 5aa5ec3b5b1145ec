"""The opt-in `robustness` family leaves no record without `--robustness`, whatever the profile:
a profile that does not claim the family (vllm-mlx) must not add UNSUPPORTED rows that the
profiles claiming it (mlx-lm) leave out, or a published matrix grows rows for one peer only."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ("pytester",)

_TESTS = '''
import pytest

@pytest.mark.conformance(family="robustness", feature="robustness.large_body")
def test_hostile():
    pass

@pytest.mark.conformance(family="chat", feature="chat.plain")
def test_plain():
    pass
'''


def _features(pytester: pytest.Pytester, profile: str) -> dict[str, str]:
    pytester.makepyfile(test_cases=_TESTS)
    report = pytester.path / "report"
    pytester.runpytest_inprocess(
        "-q", "-p", "mlxcel_conformance.plugin", "-p", "no:cacheprovider",
        f"--profile={profile}", f"--report={report}",
    )
    doc = json.loads((report / "conformance.json").read_text())
    return {r["feature"]: r["verdict"] for r in doc["records"]}


@pytest.mark.parametrize("profile", ["mlx-lm", "vllm-mlx"])
def test_no_robustness_record_without_the_flag(pytester: pytest.Pytester, profile: str) -> None:
    assert _features(pytester, profile) == {"chat.plain": "PASS"}

