"""The suite stands alone: it imports nothing from the server, its own distribution
(``conformance/pyproject.toml``) lists the same dependencies as the suite part of ``mlxcel``'s,
and (``nox -s suite_alone``, slow) installed by itself into a fresh virtualenv, without MLX, it
runs against a reference server's URL."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mlxcel_conformance.target import free_port, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "conformance"
KEY = "suite-alone-key"
# the families the CI run checks: cheap, and every layer of the suite (spec, goldens, SDKs)
FAMILIES = "chat,models,health,sdk-openai"

# Every module of the suite imported with the server (and MLX) made unimportable: a dynamic
# import that the layering linter cannot see fails here.
_BLOCKED_IMPORT = """
import importlib, pkgutil, sys
import mlxcel_conformance
for name in ("mlxcel", "mlx", "mlx_lm"):
    sys.modules[name] = None  # `import name` now raises ImportError
skip = ("mlxcel_conformance.peers.gguf_convert",)  # the peers' GGUF converter needs numpy/gguf
for info in pkgutil.walk_packages(mlxcel_conformance.__path__, "mlxcel_conformance."):
    if info.name not in skip and not info.name.endswith("__main__"):  # those run the suite
        importlib.import_module(info.name)
from mlxcel_conformance import record_goldens, target
server = record_goldens._server(None)  # the self-started server: fixtures found by location
print(" ".join(server.command()))
"""


def _dependencies(pyproject: Path) -> list[str]:
    block = re.search(r"^dependencies = \[(.*?)^\]", pyproject.read_text(), re.M | re.S)
    assert block, pyproject
    return re.findall(r'^\s*"([^"]+)"', block.group(1), re.M)


def test_the_suite_imports_nothing_from_the_server() -> None:
    done = subprocess.run([sys.executable, "-c", _BLOCKED_IMPORT], capture_output=True,
                          text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "-m mlxcel" in done.stdout and "--embedding-model" in done.stdout


def _extra(pyproject: Path, name: str) -> list[str]:
    block = re.search(rf"^{name} = \[(.*?)^\]", pyproject.read_text(), re.M | re.S)
    assert block, (pyproject, name)
    return re.findall(r'^\s*"([^"]+)"', block.group(1), re.M)


def test_the_suite_distribution_lists_the_suite_dependencies() -> None:
    """The suite's dependencies: mlxcel's shared ones plus its ``conformance`` extra, which
    the launcher of ``mlxcel-conformance`` names when they are missing."""
    from mlxcel_conformance.launcher import SUITE_MODULES

    server = set(_dependencies(ROOT / "pyproject.toml"))
    extra = _extra(ROOT / "pyproject.toml", "conformance")
    suite = _dependencies(SUITE / "pyproject.toml")
    assert {dep for dep in suite if dep not in extra} <= server
    assert set(extra) <= set(suite)
    assert {re.split(r"[<>=\[;]", dep)[0] for dep in extra} == set(SUITE_MODULES)
    assert not any(dep.startswith(("mlx", "fastapi", "uvicorn")) for dep in suite), suite


def test_both_distributions_have_one_version() -> None:
    def version(init: Path) -> str:
        found = re.search(r'__version__ = "([^"]+)"', init.read_text())
        assert found, init
        return found.group(1)

    assert (version(SUITE / "mlxcel_conformance" / "__init__.py")
            == version(ROOT / "server" / "mlxcel" / "__init__.py"))


def _clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def alone_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv with only ``pip install ./conformance``."""
    venv = tmp_path_factory.mktemp("suite-venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                           str(SUITE)], cwd=venv, env=_clean_env(), capture_output=True,
                          text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return venv / "bin"


@pytest.fixture(scope="module")
def reference_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The reference server, from this (full) environment, on a free port."""
    cwd = tmp_path_factory.mktemp("serve")
    port = free_port()
    with (cwd / "server.log").open("wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "mlxcel", "--port", str(port),
                                 "--api-key", KEY], cwd=cwd, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        assert wait_healthy(url, proc, 180, "mlxcel-server",
                            lambda: (cwd / "server.log").read_text()[-4000:], poll_s=0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.slow
def test_the_installed_suite_has_no_server_and_no_mlx(alone_bin: Path, tmp_path: Path) -> None:
    probe = ("import importlib.util as u; "
             "print([n for n in ('mlx', 'mlx_lm', 'mlxcel') if u.find_spec(n)])")
    done = subprocess.run([str(alone_bin / "python"), "-c", probe], cwd=tmp_path,
                          env=_clean_env(), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
    helped = subprocess.run([str(alone_bin / "mlxcel-conformance"), "--help"], cwd=tmp_path,
                            env=_clean_env(), capture_output=True, text=True, check=True)
    assert helped.stdout.startswith("usage: mlxcel-conformance")


@pytest.mark.slow
def test_the_installed_suite_runs_against_a_url(alone_bin: Path, reference_url: str,
                                                 tmp_path: Path) -> None:
    done = subprocess.run(
        [str(alone_bin / "mlxcel-conformance"), "--base-url", reference_url, "--api-key", KEY,
         "--families", FAMILIES, "--report", str(tmp_path / "report")],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=1800)
    report = json.loads((tmp_path / "report" / "conformance.json").read_text())
    counts = report["summary"]["counts"]
    assert done.returncode == 0 and counts["FAIL"] == 0 and counts["ERROR"] == 0, (
        done.stdout[-6000:])
    assert counts["PASS"] > 0
