"""The layering contracts in pyproject.toml's ``[tool.importlinter]`` (``nox -s lint``) hold on
this tree, and each one catches a violation planted in a temporary copy of the packages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"mlxcel": ROOT / "server" / "mlxcel",
            "mlxcel_conformance": ROOT / "conformance" / "mlxcel_conformance"}
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
# each contract, and a module that breaks it: (file planted in the copy, its one import)
PLANTS = {
    "engine-below-http": ("mlxcel/engine/_planted.py",
                          "from mlxcel.families.openai_chat import routes"),
    "chat-structured-below-http": ("mlxcel/structured/_planted.py",
                                   "from mlxcel.families.llama import native_completion"),
    "suite-alone": ("mlxcel_conformance/_planted.py", "from mlxcel.bundled import DEFAULT_FIXTURE"),
    "chat-structured-above-engine": ("mlxcel/chat/_planted.py", "from mlxcel.engine import stops"),
    "generation-neutral": ("mlxcel/generation/_planted.py", "import fastapi"),
    "families-independent": ("mlxcel/families/completions/_planted.py",
                             "from mlxcel.families.openai_chat import chat_request"),
    "shared-below-families": ("mlxcel/settings/_planted.py",
                              "from mlxcel.families.audio import routes"),
    "families-below-app": ("mlxcel/families/images/_planted.py",
                           "from mlxcel.app import create_app"),
}


def _contracts() -> dict[str, str]:
    """The active contracts' names by id (a commented-out one would not be active)."""
    found = re.findall(r'^id = "([^"]+)"\nname = "([^"]+)"', (ROOT / "pyproject.toml").read_text(),
                       re.M)
    return dict(found)


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` with this repository's contracts (its pyproject.toml, read from the
    working directory) over the packages under ``tree``."""
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)


def _copy_packages(dest: Path) -> Path:
    for name, source in PACKAGES.items():
        shutil.copytree(source, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def test_every_contract_has_a_planted_violation() -> None:
    assert set(_contracts()) == set(PLANTS)


def test_the_contracts_hold_on_this_tree(tmp_path: Path) -> None:
    done = _lint(_copy_packages(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(PLANTS)} kept, 0 broken" in done.stdout


@pytest.mark.parametrize("contract", sorted(PLANTS))
def test_a_planted_violation_breaks_its_contract(contract: str, tmp_path: Path) -> None:
    tree = _copy_packages(tmp_path)
    planted, line = PLANTS[contract]
    (tree / planted).write_text(f'"""A violation planted by the test."""\n\n{line}\n')
    done = _lint(tree)
    assert done.returncode != 0, done.stdout
    # an import may break a contract below it too (api/ imports the engine): this one breaks
    assert f"{_contracts()[contract]} BROKEN" in done.stdout, done.stdout
    module = planted.removesuffix(".py").replace("/", ".")
    assert module in done.stdout, done.stdout  # the report names the planted import
