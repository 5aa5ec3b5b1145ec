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


REPO = PACKAGE.parents[1]
_FAIL_NAMES = re.compile(r'\bfail\(\s*"([a-z_0-9]+)"')
# A URL, or a path-like token that must name a file or folder of this repository.
_URL = re.compile(r"https://[^\s);,]+")
_PATH = re.compile(r"(?<![\w./:-])((?:fixtures|goldens|openapi|docs|conformance|server)"
                   r"/[\w./*-]*)")
_OUTSIDE = re.compile(r"FACTS\.md|ARCHITECTURE\.md|PEERS\.md|\.\./shared|/work/|shared/")


def test_every_name_fail_uses_is_registered() -> None:
    used = {m.group(1) for p in PACKAGE.rglob("*.py")
            for m in _FAIL_NAMES.finditer(p.read_text())}
    missing = sorted(name for name in used if name not in REGISTRY and not _found(name))
    assert not missing, f"register these checks (@check or inline_checks.py): {missing}"


def _found(name: str) -> bool:
    from mlxcel_conformance.checks.registry import get_check
    from mlxcel_conformance.errors import SetupError

    try:
        get_check(name)
    except SetupError:
        return False
    return True


def test_every_source_resolves_to_a_url_or_a_repository_file() -> None:
    for name, (_tier, source) in SOURCES.items():
        assert not _OUTSIDE.search(source), f"{name} cites a file outside the repository"
        paths = _PATH.findall(source)
        assert _URL.search(source) or paths, f"{name}: no URL and no repository file: {source}"
        for path in paths:
            found = list(REPO.glob(path.rstrip("/"))) if "*" in path else [REPO / path]
            assert found and all(p.exists() for p in found), f"{name}: {path} is not in the repo"


def test_no_code_or_published_page_cites_a_file_outside_the_repository() -> None:
    roots = [PACKAGE, REPO / "docs"]
    cited = [str(p.relative_to(REPO)) for root in roots for p in root.rglob("*")
             if p.suffix in {".py", ".md", ".json", ".html"} and p.is_file()
             and _OUTSIDE.search(p.read_text(errors="replace"))]
    assert not cited, f"these cite FACTS.md, ARCHITECTURE.md or ../shared: {cited}"
