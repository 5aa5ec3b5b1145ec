"""The GitHub workflows and the composite action are valid and call what exists.

- every workflow parses, every job has a runner and steps, every step runs or uses something;
- the Linux job runs exactly `.ci/run`, the macOS job runs on Apple Silicon;
- every `nox -s NAME` they run is a session of noxfile.py (a session that may not exist yet is
  allowed only behind an explicit `nox --list` guard);
- action.yml is a composite action whose inputs reach scripts through `env` only, and whose
  scripts, run here against a live reference server, write the matrix to the job summary and
  fail only on FAIL verdicts.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlxcel_conformance.target import SELF_STARTED_API_KEY, ReferenceServer, Target

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
_NOX_CALL = re.compile(r"\bnox\s+-s\s+([A-Za-z0-9_.-]+)")
_EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def nox_sessions() -> set[str]:
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                call = deco if isinstance(deco, ast.Call) else None
                target = call.func if call else deco
                if ast.unparse(target) in ("nox.session", "session"):
                    named = [k.value for k in (call.keywords if call else []) if k.arg == "name"]
                    names.add(ast.literal_eval(named[0]) if named else node.name)
    return names


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict), path
    return data


def _steps(workflow: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for job_name, job in workflow["jobs"].items():
        for step in job["steps"]:
            yield job_name, step


def test_there_are_workflows() -> None:
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "macos.yml"}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_shape(path: Path) -> None:
    workflow = _load(path)
    assert workflow.get("name")
    assert workflow.get("on", workflow.get(True)), "no trigger"  # YAML 1.1 reads `on` as True
    for job_name, job in workflow["jobs"].items():
        assert job.get("runs-on"), job_name
        assert job.get("steps"), job_name
    for job_name, step in _steps(workflow):
        assert ("run" in step) != ("uses" in step), (job_name, step)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflows_call_existing_nox_sessions(path: Path) -> None:
    sessions = nox_sessions()
    for job_name, step in _steps(_load(path)):
        script = str(step.get("run", ""))
        for name in _NOX_CALL.findall(script):
            guarded = re.search(rf"nox --list[^\n]*\b{re.escape(name)}\b", script)
            assert name in sessions or guarded, f"{path.name}/{job_name}: no nox session {name}"


def test_linux_job_is_ci_run() -> None:
    job = _load(ROOT / ".github/workflows/ci.yml")["jobs"]["linux"]
    assert "ubuntu" in job["runs-on"]
    assert [s["run"] for s in job["steps"] if "run" in s] == ["bash .ci/run"]
    assert "nox -s tests" in (ROOT / ".ci" / "run").read_text()


def test_macos_job_uses_apple_silicon_and_uploads_reports() -> None:
    job = _load(ROOT / ".github/workflows/macos.yml")["jobs"]["apple-silicon"]
    version = int(re.fullmatch(r"macos-(\d+)", job["runs-on"]).group(1))  # type: ignore[union-attr]
    assert version >= 14  # macos-13 and older are Intel runners
    scripts = "\n".join(str(s.get("run", "")) for s in job["steps"])
    assert "mx.metal.is_available()" in scripts and "nox -s tests" in scripts
    uses = [s["uses"] for s in job["steps"] if "uses" in s]
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    assert any(u.startswith("actions/cache@") for u in uses)


# ------------------------------------------------------------------------------ action.yml
ACTION = ROOT / "action.yml"


def test_action_is_a_valid_composite_action() -> None:
    action = _load(ACTION)
    assert action["name"] and action["description"]
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert inputs["base-url"]["required"] is True
    for step in action["runs"]["steps"]:
        if "run" in step:
            assert step.get("shell") == "bash", step["name"]
            # inputs reach scripts only through env: no expression is pasted into a script
            assert "${{" not in step["run"], step["name"]
        for value in [*(step.get("env") or {}).values(), *(step.get("with") or {}).values()]:
            for expr in _EXPR.findall(str(value)):
                if expr.startswith("inputs."):
                    assert expr.removeprefix("inputs.") in inputs, expr
    for output in action["outputs"].values():
        step_id = _EXPR.findall(output["value"])[0].split(".")[1]
        assert step_id in {s.get("id") for s in action["runs"]["steps"]}


def test_action_options_exist_in_the_suite() -> None:
    from mlxcel_conformance.cli import VALUE_OPTIONS

    run = next(s for s in _load(ACTION)["runs"]["steps"] if s.get("id") == "run")["run"]
    used = set(re.findall(r"(--[a-z-]+)", run))
    assert "--fail-on" in used
    assert used <= VALUE_OPTIONS, used - VALUE_OPTIONS


def _run_action(target: Target, tmp_path: Path, inputs: dict[str, str]) -> dict[str, Any]:
    """Run the action's bash steps as the runner would: expressions substituted into `env`."""
    action = _load(ACTION)
    values = {name: spec.get("default", "") for name, spec in action["inputs"].items()}
    values.update(inputs, **{"base-url": target.base_url})
    summary, output = tmp_path / "summary.md", tmp_path / "output.txt"
    summary.touch()
    output.touch()
    outputs: dict[str, str] = {}

    def substitute(expr: str) -> str:
        scope, _, name = expr.partition(".")
        if scope == "inputs":
            return str(values[name])
        if scope == "steps":
            return outputs.get(name.split(".")[-1], "")
        raise AssertionError(f"unexpected expression {expr}")

    rc = 0
    bin_dir = str(Path(sys.executable).parent)
    for step in action["runs"]["steps"]:
        if "run" not in step or step["name"].startswith("Install"):
            continue  # setup-python, the install and upload-artifact are GitHub's own steps
        env = {k: _EXPR.sub(lambda m: substitute(m.group(1)), str(v))
               for k, v in (step.get("env") or {}).items()}
        env.update(GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary),
                   RUNNER_TEMP=str(tmp_path), PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
                               step["run"]], cwd=tmp_path, env={**os.environ, **env},
                              capture_output=True, text=True, timeout=600)
        for line in output.read_text().splitlines():
            key, _, value = line.partition("=")
            outputs[key] = value
        rc = proc.returncode
    report = tmp_path / values["report-dir"] / "conformance.json"
    return {"rc": rc, "outputs": outputs, "summary": summary.read_text(),
            "report": json.loads(report.read_text()) if report.exists() else None}


@pytest.fixture(scope="module")
def live_target() -> Iterator[Target]:
    server = ReferenceServer()
    target = server.start()
    try:
        yield target
    finally:
        server.stop()


def test_action_passes_a_conforming_server(live_target: Target, tmp_path: Path) -> None:
    result = _run_action(live_target, tmp_path, {
        "api-key": SELF_STARTED_API_KEY, "args": "-k health", "profile": "mlxcel"})
    assert result["rc"] == 0, result
    assert result["outputs"]["exit-code"] == "0"
    assert "# Conformance report" in result["summary"]
    verdicts = {r["verdict"] for r in result["report"]["records"] if r["family"] == "health"}
    assert verdicts == {"PASS"}


def test_action_fails_on_a_setup_error(live_target: Target, tmp_path: Path) -> None:
    # a wrong key makes every authenticated route answer 401: the suite's preflight stops the
    # run with its own exit status (77, mlxcel_conformance/exit_codes.py) before any check, and
    # the action fails with it (a FAIL verdict's exit 1: conformance/tests/test_fail_on.py)
    result = _run_action(live_target, tmp_path, {"api-key": "wrong-key", "args": "-k models"})
    assert result["outputs"]["exit-code"] == "77" and result["rc"] != 0, result
    assert result["report"] is None or not any(
        r["verdict"] == "FAIL" for r in result["report"]["records"])
