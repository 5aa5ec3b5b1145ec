"""The fuzz bounds (``x-mlxcel-fuzz-maximum`` / ``-minimum``) apply to integral floats too:
schemathesis generates ``5861.0`` for an integer property, and an unbounded ``n_probs`` with
``n_predict`` filled the context of the server under test for minutes."""

from __future__ import annotations

from mlxcel_conformance.fuzz_bounds import clamp, fuzz_limits


def test_integral_floats_are_clamped() -> None:
    limits = fuzz_limits()
    body = {"n_probs": 5861.0, "n_predict": 1129969688741.0, "max_tokens": 7}
    clamp(body, limits)
    assert body["n_probs"] == limits["n_probs"]
    assert body["n_predict"] == limits["n_predict"]
    assert body["max_tokens"] == min(7, limits["max_tokens"])


def test_floors_apply_to_floats() -> None:
    body = {"n_predict": -1.0}
    clamp(body, fuzz_limits())
    assert body["n_predict"] >= 0
