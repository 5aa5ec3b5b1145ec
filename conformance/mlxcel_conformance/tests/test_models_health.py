"""GET /v1/models, GET /health and GET /."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.health_answers import health_unavailable, settled_health
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import check_schema


@pytest.mark.conformance(family="models", feature="models.list")
def test_models_list(client: SuiteClient) -> None:
    response = client.get("/v1/models")
    expect_status(response, 200)
    body = json_body(response)
    check_schema("GET", "/v1/models", 200, body)
    if not body.get("data"):
        fail("models_list", "/v1/models lists no model", body=body)


@pytest.mark.conformance(family="health", feature="health.ready")
def test_health_ready(client: SuiteClient) -> None:
    """A loaded server answers 200, or, while another client fills every slot, its documented
    busy 503 (checks/health_answers.py), asked again before it is judged."""
    status, body = settled_health(
        lambda path: client.http.get(path, headers={"Authorization": ""}), "/health")
    if status != 200 and not (health_unavailable(status, body)
                              and body.get("status") == "no slot available"):
        fail("health_ready", f"GET /health of a loaded server answered HTTP {status}",
             status=status, body=body)
    if not isinstance(body, dict) or not isinstance(body.get("status"), str):
        fail(
            "health_ready",
            "/health does not answer a JSON object with a `status` string",
            body=body,
        )


@pytest.mark.conformance(family="observability", feature="observability.health_fields",
                         extension="observability")
@pytest.mark.parametrize("path", ["/health", "/"])
def test_health_reference_fields(client: SuiteClient, path: str) -> None:
    response = client.http.get(path, headers={"Authorization": ""})
    expect_status(response, 200, 503)
    body = json_body(response)
    check_schema("GET", path, response.status_code, body)
    if response.status_code == 503 and body.get("status") != "no slot available":
        fail("health_ready", "a loaded server reports 503 without 'no slot available'", body=body)
