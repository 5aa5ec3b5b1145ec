"""Every request limit has a flag, and the spec (``info.x-mlxcel-limits``) and docs/limits.md
state that flag with the CLI's own default."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from mlxcel.cli import build_parser
from mlxcel.config import ServerConfig
from mlxcel.families.responses.store_config import StoreConfig
from mlxcel.limits import RequestLimits
from mlxcel_conformance import spec

DOC = Path(__file__).resolve().parents[2] / "docs" / "limits.md"
SERVER_FIELDS = ("timeout_header_s", "timeout_read_s", "timeout_keep_alive_s")
STORE_FIELDS = ("responses_store_max_bytes",)  # the Responses family's section
NAMES = [f.name for f in dataclasses.fields(RequestLimits)] + list(SERVER_FIELDS) + list(
    STORE_FIELDS)


def documented() -> dict[str, dict[str, object]]:
    limits: dict[str, dict[str, object]] = spec.load_spec()["info"]["x-mlxcel-limits"]
    return limits


def test_the_spec_lists_every_limit_and_nothing_else() -> None:
    assert sorted(documented()) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_each_limit_has_its_flag_and_default(name: str) -> None:
    entry = documented()[name]
    flag = str(entry["flag"])
    defaults = {a.option_strings[0]: a.default for a in build_parser()._actions
                if a.option_strings}
    assert flag in defaults, f"{name}: no flag {flag}"
    assert defaults[flag] == entry["default"], f"{flag}: CLI default differs from the spec"
    model_default = (getattr(ServerConfig(model="m"), name) if name in SERVER_FIELDS
                     else getattr(StoreConfig(), name) if name in STORE_FIELDS
                     else getattr(RequestLimits(), name))
    assert model_default == entry["default"], f"{name}: default differs from the spec"
    text = DOC.read_text()
    assert f"`{flag}`" in text, f"docs/limits.md does not describe {flag}"
