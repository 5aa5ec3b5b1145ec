"""API keys (401 in the documented shape; /health and / exempt) and unknown routes/methods."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai, check_error_status
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


# A route or a method no public API defines has no documented error body: its status is HTTP's
# (RFC 9110, 15.5.5 404 and 15.5.6 405; 15.6.2 501), the OpenAI-shaped body the reference's
# promise (the `route_errors` extension).
_RFC9110 = "RFC 9110 (https://www.rfc-editor.org/rfc/rfc9110), 15.5.5, 15.5.6 and 15.6.2"


def _unknown_route(client: SuiteClient) -> tuple[int, Any]:
    return response_of(client.post("/v1/no-such-route", {"x": 1}))


def _wrong_method(client: SuiteClient) -> tuple[int, Any]:
    """``GET /v1/chat/completions`` is a real OpenAI route (it lists stored completions):
    PATCH is defined by no API."""
    return response_of(client.http.request("PATCH", "/v1/chat/completions", json={}))


@pytest.mark.conformance(family="chat", feature="routing.unknown_route")
def test_unknown_route_is_404(client: SuiteClient) -> None:
    status, _ = _unknown_route(client)
    check_error_status(status, 404, source=_RFC9110 + ": an unknown route is 404")


@pytest.mark.conformance(family="chat", feature="routing.unknown_route.body",
                         extension="route_errors")
def test_unknown_route_error_body(client: SuiteClient) -> None:
    status, body = _unknown_route(client)
    check_error_body_openai(body, status=status, expected=404)


@pytest.mark.conformance(family="chat", feature="routing.wrong_method")
def test_wrong_method_is_an_error(client: SuiteClient) -> None:
    status, _ = _wrong_method(client)
    check_error_status(status, (404, 405, 501), source=_RFC9110)


@pytest.mark.conformance(family="chat", feature="routing.wrong_method.body",
                         extension="route_errors")
def test_wrong_method_error_body(client: SuiteClient) -> None:
    status, body = _wrong_method(client)
    check_error_body_openai(body, status=status, expected=(404, 405, 501))
