"""The schemathesis check fuzzes invalid requests too: a server that answers a schema-invalid
``/tokenize`` body with a 500 fails it, one that answers 400 in the documented shape passes.
Whether an invalid request must also be refused is the target's claim (``openapi_strict``): a
lenient server (every body answered 200) passes without the claim and fails with it, and a
server that refuses exactly what the spec calls invalid passes with it, even where the
suite's own fix-ups (token ids clamped into the vocabulary) repair a generated body.
Tiny local HTTP servers (``replay_target.serving``) stand in for the server: the point is the
check, not inference."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from replay_target import serving

from mlxcel_conformance import spec
from mlxcel_conformance.checks.fuzzing import REFUSAL_EXTENSION, run_schemathesis
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.profiles import PROFILES
from mlxcel_conformance.target import Target


def _error(status: int) -> tuple[int, str, bytes]:
    kind = "invalid_request_error" if status == 400 else "server_error"
    error = {"message": "bad body", "type": kind, "param": None, "code": None}
    return status, "application/json", json.dumps({"error": error}).encode()


@dataclass
class TokenizeOnly:
    """``/tokenize`` answering a valid body with two ids and any other with ``invalid_status``
    (200: a lenient server that reads what it can)."""

    invalid_status: int

    def answer(self, path: str, request: Any) -> tuple[int, str, bytes]:
        valid = isinstance(request, dict) and isinstance(request.get("content"), str) and all(
            isinstance(request.get(flag, False), bool) for flag in ("add_special", "with_pieces"))
        if valid or self.invalid_status == 200:
            return 200, "application/json", b'{"tokens": [1, 2]}'
        return _error(self.invalid_status)


class SpecStrictDetokenize:
    """``/detokenize`` refusing exactly the bodies the spec calls invalid, as received."""

    def __init__(self) -> None:
        self.refused = 0

    def answer(self, path: str, request: Any) -> tuple[int, str, bytes]:
        if spec.validate_request_json("POST", "/detokenize", request):
            self.refused += 1
            return _error(400)
        return 200, "application/json", b'{"content": "hi"}'


def test_invalid_requests_answered_400_pass() -> None:
    with serving(TokenizeOnly(400)) as url:
        run_schemathesis(Target(url), "POST", "/tokenize", 6, require_refusal=True)


def test_a_500_on_an_invalid_request_fails_the_check() -> None:
    """Valid requests alone never reach the fault: only the invalid-data pass finds it."""
    with serving(TokenizeOnly(500)) as url, pytest.raises(ConformanceFailure) as failure:
        run_schemathesis(Target(url), "POST", "/tokenize", 6)
    assert "(invalid requests)" in str(failure.value)


def test_a_lenient_server_passes_without_the_claim() -> None:
    """Accepting more than the spec states is no contract violation for a peer."""
    with serving(TokenizeOnly(200)) as url:
        run_schemathesis(Target(url), "POST", "/tokenize", 6)


def test_a_lenient_server_fails_when_it_claims_refusal() -> None:
    with serving(TokenizeOnly(200)) as url, pytest.raises(ConformanceFailure) as failure:
        run_schemathesis(Target(url), "POST", "/tokenize", 6, require_refusal=True)
    assert "(invalid requests): ST201 Schema-violating request accepted" in str(failure.value)
    assert "Invalid component" in str(failure.value)  # which part of the request was invalid


def test_refusal_is_judged_on_the_request_as_sent() -> None:
    """Some generated invalid bodies hold token ids outside the fuzz bounds only; clamped,
    they are valid, and a server that accepts them is right."""
    server = SpecStrictDetokenize()
    with serving(server) as url:
        run_schemathesis(Target(url), "POST", "/detokenize", 30, require_refusal=True)
    assert server.refused > 0  # the invalid pass did reach the server


def test_only_the_reference_profile_claims_refusal() -> None:
    claiming = {name for name, profile in PROFILES.items()
                if profile.claims_extension(REFUSAL_EXTENSION)}
    assert claiming == {"mlxcel"}
    # and no peer runs the schema family at all
    assert {name for name, profile in PROFILES.items() if profile.claims("schema")} == {"mlxcel"}
