"""Build hook: the spec and the goldens, which live at the repository root, go into the suite's
wheel as package data (``mlxcel_conformance/_data``) and into its sdist at the sdist's root, so
a wheel builds both from the checkout (``pip install ./conformance``) and from the sdist."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SHARED = ("openapi", "goldens")


class SharedDataHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        root = Path(self.root)
        for name in SHARED:
            source = root / name if (root / name).is_dir() else root.parent / name
            if not source.is_dir():
                raise FileNotFoundError(f"{name}/ not found beside {root} nor inside it")
            target = f"mlxcel_conformance/_data/{name}" if self.target_name == "wheel" else name
            build_data["force_include"][str(source)] = target
