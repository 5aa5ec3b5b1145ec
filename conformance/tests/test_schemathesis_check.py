"""The schemathesis check fuzzes invalid requests too: a server that answers a schema-invalid
``/tokenize`` body with a 500 fails it, one that answers 400 in the documented shape passes.
A tiny local HTTP server (``replay_target.serving``) stands in for the server: the point is the
check, not inference."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from replay_target import serving

from mlxcel_conformance.checks.fuzzing import run_schemathesis
from mlxcel_conformance.errors import ConformanceFailure
from mlxcel_conformance.target import Target


@dataclass
class TokenizeOnly:
    """``/tokenize`` answering a valid body with two ids and any other with ``invalid_status``."""

    invalid_status: int

    def answer(self, path: str, request: Any) -> tuple[int, str, bytes]:
        valid = isinstance(request, dict) and isinstance(request.get("content"), str) and all(
            isinstance(request.get(flag, False), bool) for flag in ("add_special", "with_pieces"))
        if valid:
            return 200, "application/json", b'{"tokens": [1, 2]}'
        kind = "invalid_request_error" if self.invalid_status == 400 else "server_error"
        error = {"message": "bad body", "type": kind, "param": None, "code": None}
        return self.invalid_status, "application/json", json.dumps({"error": error}).encode()


def test_invalid_requests_answered_400_pass() -> None:
    with serving(TokenizeOnly(400)) as url:
        run_schemathesis(Target(url), "POST", "/tokenize", 6)


def test_a_500_on_an_invalid_request_fails_the_check() -> None:
    """Valid requests alone never reach the fault: only the invalid-data pass finds it."""
    with serving(TokenizeOnly(500)) as url, pytest.raises(ConformanceFailure) as failure:
        run_schemathesis(Target(url), "POST", "/tokenize", 6)
    assert "(invalid requests)" in str(failure.value)
