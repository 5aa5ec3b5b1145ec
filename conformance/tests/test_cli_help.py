"""``mlxcel-conformance --help`` is the suite's own short help, every option with its default;
pytest's full help stays behind ``--help-pytest``."""

from __future__ import annotations

import subprocess
import sys

import pytest

import mlxcel_conformance
from mlxcel_conformance import cli


def _help(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        cli.main(list(argv))
    assert exited.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_is_the_suites_own(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, "--base-url", "http://x", flag)
    assert out.startswith("usage: mlxcel-conformance")
    assert len(out.splitlines()) < 90  # pytest's help is ~400 lines
    assert "--help-pytest" in out and "-k EXPR" in out


def test_help_lists_every_suite_option_with_its_default(
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, "--help")
    options = cli.suite_options()
    names = [names[0] for names, _ in options]
    assert {"--base-url", "--goldens", "--families", "--fail-on", "--report", "--api-key",
            "--profile", "--model"} <= set(names)
    positions = [out.index(f"\n  {name}") for name in names]
    assert positions == sorted(positions)  # in the plugin's order
    for names_, attrs in options:
        assert "(default: " in attrs["help"], names_
    assert "--goldens auto|exact|shape" in out and "(default: auto)" in out
    assert "conformance.html" in out  # the HTML report


def test_value_options_are_joined_for_pytest() -> None:
    """Every suite option that takes a value reaches pytest as ``--opt=value``."""
    takes_value = {names[0] for names, attrs in cli.suite_options()
                   if attrs.get("action") not in ("store_true", "store_false")}
    assert takes_value <= cli.VALUE_OPTIONS
    assert cli.join_values(["--report", "out", "-x"]) == ["--report=out", "-x"]


@pytest.fixture(scope="module")
def pytest_help() -> subprocess.CompletedProcess[str]:
    """``mlxcel-conformance --help-pytest``, run once for the tests that read it."""
    return subprocess.run([sys.executable, "-m", "mlxcel_conformance", "--help-pytest"],
                          capture_output=True, text=True, timeout=120)


def test_help_pytest_is_pytests_full_help(pytest_help: subprocess.CompletedProcess[str]
                                          ) -> None:
    done = pytest_help
    assert done.returncode == 0, done.stderr
    assert "-k EXPRESSION" in done.stdout  # pytest's own
    assert "--base-url=URL" in done.stdout  # the plugin's options, in pytest's help too


def test_help_lists_every_option_the_plugins_register(
        capsys: pytest.CaptureFixture[str], pytest_help: subprocess.CompletedProcess[str]
) -> None:
    """pytest's own help shows what the plugins really registered (``mlxcel-conformance:``
    group): the short help lists each of them, robustness options included."""
    done = pytest_help
    group = done.stdout.split("\nmlxcel-conformance:\n", 1)[1].split("\n\n", 1)[0]
    registered = {line.split()[0].split("=")[0].rstrip(",") for line in group.splitlines()
                  if line.startswith("  --")}
    assert {"--base-url", "--robustness", "--server-pid"} <= registered
    out = _help(capsys, "--help")
    listed = {line.split()[0] for line in out.splitlines() if line.startswith("  --")}
    assert registered <= listed, registered - listed
    assert "exit status:" in out and "  69  nothing answers at --base-url" in out


def test_version_is_the_suites_own(capsys: pytest.CaptureFixture[str]) -> None:
    out = _help(capsys, "--version")
    assert out.startswith(f"mlxcel-conformance {mlxcel_conformance.__version__} (pytest ")


@pytest.mark.parametrize(("argv", "quiet"), [
    ([], True), (["-k", "chat"], True), (["--report", "out"], True),
    (["-v"], False), (["--tb=short"], False), (["-rA"], False)])
def test_one_line_per_fail_unless_pytests_reporting_is_asked(argv: list[str],
                                                             quiet: bool) -> None:
    args = cli.pytest_args(argv)
    assert ("--tb=no" in args) is quiet and ("-qq" in args) is quiet
