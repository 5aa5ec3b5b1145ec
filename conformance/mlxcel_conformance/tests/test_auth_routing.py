"""API keys (401 in the documented shape; /health and / exempt) and unknown routes/methods."""

from __future__ import annotations

import httpx
import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status
from mlxcel_conformance.flows import chat_payload, response_of
from mlxcel_conformance.target import Target


def _needs_key(target: Target) -> str:
    if not target.api_key:
        pytest.skip("UNSUPPORTED: the target was given no --api-key, so auth cannot be checked")
    return target.api_key


def _bare(target: Target) -> httpx.Client:
    return httpx.Client(base_url=target.base_url, timeout=30.0)


@pytest.mark.conformance(family="auth", feature="auth.missing_key")
def test_missing_key_is_401(target: Target, model_name: str | None) -> None:
    _needs_key(target)
    with _bare(target) as http:
        status, body = response_of(http.post("/v1/chat/completions", json=chat_payload(model_name)))
    check_error_body_openai(body, status=status, expected=401)


@pytest.mark.conformance(family="auth", feature="auth.wrong_key")
def test_wrong_key_is_401(target: Target, model_name: str | None) -> None:
    _needs_key(target)
    with _bare(target) as http:
        response = http.get("/v1/models", headers={"Authorization": "Bearer not-the-key"})
    status, body = response_of(response)
    check_error_body_openai(body, status=status, expected=401)


@pytest.mark.conformance(family="auth", feature="auth.raw_key")
def test_raw_key_without_bearer_is_accepted(target: Target) -> None:
    key = _needs_key(target)
    with _bare(target) as http:
        expect_status(http.get("/v1/models", headers={"Authorization": key}), 200)


@pytest.mark.conformance(family="auth", feature="auth.health_exempt")
@pytest.mark.parametrize("path", ["/health", "/"])
def test_health_needs_no_key(target: Target, path: str) -> None:
    _needs_key(target)
    with _bare(target) as http:
        response = http.get(path)
    if response.status_code == 401:
        fail("auth_health_exempt", f"GET {path} demands the API key", body=response.text)


@pytest.mark.conformance(family="chat", feature="routing.unknown_route")
def test_unknown_route_is_404(client: SuiteClient) -> None:
    status, body = response_of(client.post("/v1/no-such-route", {"x": 1}))
    check_error_body_openai(body, status=status, expected=404)


@pytest.mark.conformance(family="chat", feature="routing.wrong_method")
def test_wrong_method_is_an_error(client: SuiteClient) -> None:
    """A method no API defines on the route (``GET /v1/chat/completions`` is a real OpenAI
    route: it lists stored completions): 405, or 404, or 501 for a method the server does not
    implement at all (RFC 9110, 15.6.2), in the error shape."""
    status, body = response_of(client.http.request("PATCH", "/v1/chat/completions", json={}))
    check_error_body_openai(body, status=status, expected=(404, 405, 501))
