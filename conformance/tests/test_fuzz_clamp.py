"""The fuzz bounds (``x-mlxcel-fuzz-maximum`` / ``-minimum``) apply to integral floats too:
schemathesis generates ``5861.0`` for an integer property, and an unbounded ``n_probs`` with
``n_predict`` filled the context of the server under test for minutes."""

from __future__ import annotations

from typing import Any

from mlxcel_conformance.fuzz_bounds import bound_generation, clamp, fuzz_limits


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


def test_a_body_without_a_length_gets_its_route_s_field() -> None:
    limits = fuzz_limits()
    cases: dict[str, tuple[dict[str, Any], str]] = {
        "/v1/chat/completions": ({"messages": []}, "max_tokens"),
        "/v1/completions": ({"prompt": "x", "max_tokens": None}, "max_tokens"),
        "/v1/responses": ({"input": "x"}, "max_output_tokens"),
        "/completion": ({"prompt": "x"}, "n_predict"),
    }
    for path, (body, field) in cases.items():
        bound_generation(body, "POST", path, limits)
        assert body[field] == limits[field], path
    kept = {"messages": [], "max_completion_tokens": 3}
    bound_generation(kept, "POST", "/v1/chat/completions", limits)
    assert kept == {"messages": [], "max_completion_tokens": 3}
    # Messages requires max_tokens: its absence is the invalid part of a negative case
    missing: dict[str, object] = {"messages": []}
    bound_generation(missing, "POST", "/v1/messages", limits)
    assert "max_tokens" not in missing
