"""The documentation site builds with ``--strict``, has every page, shows the generated API
reference and configuration, and a broken link or a missing page fails the build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mlxcel.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["index.md", "quickstart.md", "testing.md", "ci.md", "results.md",
         "conformance/verdicts.md", "benchmarks.md",
         "api/index.md", "api/schemas.md", "configuration.md", "gguf.md", "limits.md", "chat.md",
         "responses.md", "llama-server.md",
         "vision.md", "audio.md",
         "images.md", "speculative.md", "distributed.md", "design.md"]


def _build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        cwd=config.parent, capture_output=True, text=True, timeout=300, env=env,
    )


def _nav_pages(nav: list[object]) -> list[str]:
    out: list[str] = []
    for entry in nav:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        out += _nav_pages(value) if isinstance(value, list) else [str(value)]
    return out


def _html(site: Path, page: str) -> str:
    stem = page[: -len(".md")]
    path = site / ("index.html" if stem == "index" else f"{stem.removesuffix('/index')}/index.html")
    return path.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = _build(ROOT / "mkdocs.yml", out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_nav_lists_every_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    assert _nav_pages(config["nav"]) == PAGES


def test_every_page_is_built(site: Path) -> None:
    for page in PAGES:
        assert "<h1" in _html(site, page), page


def test_api_reference_has_every_operation_and_schema(site: Path) -> None:
    spec = yaml.safe_load((ROOT / "openapi" / "openapi.yaml").read_text())
    operations, schemas = _html(site, "api/index.md"), _html(site, "api/schemas.md")
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if isinstance(op, dict) and "responses" in op:
                assert f'id="{op["operationId"]}"' in operations, (method, path)
    for name in spec["components"]["schemas"]:
        assert f'id="{name}"' in schemas, name
    served_spec = (site / "api" / "openapi.yaml").read_text()
    assert served_spec == (ROOT / "openapi" / "openapi.yaml").read_text()


def test_configuration_lists_every_flag(site: Path) -> None:
    page = _html(site, "configuration.md")
    for action in build_parser()._actions:
        for flag in action.option_strings:
            assert f"<code>{flag}</code>" in page, flag
    assert "LLAMA_ARG_PORT" in page and "--fail-on" in page


def test_broken_link_and_missing_page_fail_the_build(tmp_path: Path) -> None:
    for name in ("docs", "openapi"):
        shutil.copytree(ROOT / name, tmp_path / name)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    config["nav"].append({"Gone": "missing-page.md"})
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    with (tmp_path / "docs" / "index.md").open("a") as page:
        page.write("\nSee [nowhere](no-such-page.md).\n")
    proc = _build(tmp_path / "mkdocs.yml", tmp_path / "site")
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "missing-page.md" in output and "no-such-page.md" in output
