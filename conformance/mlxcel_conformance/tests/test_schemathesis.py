"""schemathesis over every operation of openapi/ (``checks/fuzzing.py``), one test each; the
invalid requests must be refused where the profile claims ``openapi_strict``."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance import spec
from mlxcel_conformance.checks.fuzzing import REFUSAL_EXTENSION, run_schemathesis
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.passes import fuzz_seed
from mlxcel_conformance.profiles import Profile
from mlxcel_conformance.surfaces import OPTIONAL_SURFACES, require_surface
from mlxcel_conformance.target import Target


def _labels() -> list[Any]:
    out = []
    paths = spec.load_spec()["paths"]
    for op in spec.operations():
        definition = paths[op.path][op.method.lower()]
        if definition.get("x-mlxcel-alias-of") or definition.get("x-mlxcel-no-fuzz"):
            continue  # an alias is fuzzed as the operation it repeats; no-fuzz says why
        mark = pytest.mark.conformance(family="schema", feature=f"schema.{op.method} {op.path}",
                                       extension="openapi")
        out.append(pytest.param(op.method, op.path, id=f"{op.method} {op.path}", marks=mark))
    return out


@pytest.mark.parametrize(("method", "path"), _labels())
def test_schemathesis(target: Target, client: SuiteClient, profile: Profile, method: str,
                      path: str, pytestconfig: pytest.Config) -> None:
    if path in OPTIONAL_SURFACES:
        require_surface(client, path)
    run_schemathesis(target, method, path, int(pytestconfig.getoption("--fuzz-examples")),
                     require_refusal=profile.claims_extension(REFUSAL_EXTENSION),
                     seed=fuzz_seed(pytestconfig))
