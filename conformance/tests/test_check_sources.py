"""Every check has a tier and names its source; every FAIL carries them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mlxcel_conformance.checks import REGISTRY
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.checks.sources import SOURCES, Tier
from mlxcel_conformance.errors import ConformanceFailure

PACKAGE = Path(__file__).resolve().parents[1] / "mlxcel_conformance"
_NAMES = re.compile(r'(?:\bfail\(|@check\()\s*"([a-z_0-9]+)"')


def _used_names() -> set[str]:
    return {m.group(1) for p in PACKAGE.rglob("*.py") for m in _NAMES.finditer(p.read_text())}


def test_every_check_used_has_a_tier_and_a_source() -> None:
    missing = sorted(_used_names() - set(SOURCES))
    assert not missing, f"add these checks to checks/sources.py: {missing}"
    for name, (tier, source) in SOURCES.items():
        assert isinstance(tier, Tier) and len(source) > 10, name


def test_registered_checks_carry_their_provenance() -> None:
    for name, spec in REGISTRY.items():
        assert (spec.tier, spec.source) == SOURCES[name], name


def test_contract_sources_name_a_public_contract_not_the_reference() -> None:
    for name, (tier, source) in SOURCES.items():
        if tier is Tier.CONTRACT:
            assert not source.startswith("mlxcel API reference"), name


def test_a_failure_carries_tier_and_source() -> None:
    with pytest.raises(ConformanceFailure) as info:
        fail("chat_completion_body", "broken", body={})
    assert info.value.evidence["tier"] == "contract"
    assert "Chat Completions" in info.value.evidence["source"]
    with pytest.raises(ConformanceFailure) as info:
        fail("error_status", "HTTP 200", source="OpenAI API reference, Responses: background")
    assert info.value.evidence["source"] == "OpenAI API reference, Responses: background"


def test_an_unsourced_check_says_so() -> None:
    with pytest.raises(ConformanceFailure) as info:
        fail("no_such_check", "x")
    assert "sources.py" in info.value.evidence["source"]
