"""The neutral layer stays neutral: ``generation/`` imports nothing else from the server, and
``chat/`` and ``structured/`` (which build prompts and read output for every family) import
neither the engine nor the HTTP or protocol layers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mlxcel"


def _server_imports(path: Path) -> set[str]:
    """The first-level ``mlxcel`` packages a module imports (relative imports resolved)."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(parts[:len(parts) - node.level])
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            names = [target + [alias.name] for alias in node.names] if len(target) < 2 \
                else [target]
            found.update(t[1] for t in names if t[0] == "mlxcel" and len(t) > 1)
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names
                         if a.name.startswith("mlxcel."))
    return found


@pytest.mark.parametrize(("package", "allowed"), [
    ("generation", {"generation"}),
    # limits.py (the request limits, a leaf that imports only errors) bounds the text a
    # template renders and schema depth.
    ("chat", {"chat", "generation", "structured", "errors", "media", "limits"}),
    ("structured", {"structured", "generation", "errors", "chat", "limits"}),
])
def test_layer_imports(package: str, allowed: set[str]) -> None:
    for path in sorted((PACKAGE / package).rglob("*.py")):
        extra = _server_imports(path) - allowed
        assert not extra, f"{path.relative_to(PACKAGE)} imports mlxcel.{sorted(extra)}"
