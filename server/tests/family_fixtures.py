"""The tool-call family fixtures the tests run on: ``fixtures/family_specs.py`` read as data
(fixture directory, format name, scripted replies), plus the scripted tools."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "fixtures" / "models"
SCRIPTED = json.loads((ROOT / "fixtures" / "scripted.json").read_text(encoding="utf-8"))
SCRIPTED_BY_NAME = {c["name"]: c for c in SCRIPTED}
# The tools exactly as the fixtures were trained on them.
WEATHER: dict[str, Any] = SCRIPTED_BY_NAME["tool_call"]["tools"][0]
TIME_TOOLS: list[dict[str, Any]] = SCRIPTED_BY_NAME["tool_call_time"]["tools"]


def _load_specs() -> Any:
    spec = importlib.util.spec_from_file_location("family_specs",
                                                  ROOT / "fixtures" / "family_specs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("family_specs", module)
    spec.loader.exec_module(module)
    return module


SPECS = _load_specs()
# format name -> fixture directory name, for every family whose fixture is committed
FAMILY_DIRS: dict[str, str] = {fmt: family.name for fmt, family in SPECS.FAMILIES.items()
                               if (MODELS / family.name / "model.safetensors").is_file()}
HELLO_FAMILIES = sorted(fmt for fmt in FAMILY_DIRS if "hello" in SPECS.FAMILIES[fmt].replies)
