"""Tests for checks/errors_checks.py: the real error bodies pass, the peers' shapes fail."""

from __future__ import annotations

import json
from typing import Any

import pytest
from real_stream_corpus import cassette_response, find, read, recording_responses, rejects

from mlxcel_conformance.checks.errors_checks import (
    check_error_body_anthropic,
    check_error_body_openai,
    check_error_status,
)
from mlxcel_conformance.errors import Severity

OPENAI_401 = "openai-chat-error-401-invalid-api-key.json"
ANTHROPIC_401 = "anthropic-error-401-authentication.json"


def openai_body() -> dict[str, Any]:
    return json.loads(read(find(OPENAI_401)))


def anthropic_body() -> dict[str, Any]:
    return json.loads(read(find(ANTHROPIC_401)))


def test_openai_error_returned() -> None:
    error = check_error_body_openai(read(find(OPENAI_401)), status=401, expected=401)
    assert error["code"] == "invalid_api_key"


def test_openai_error_from_cassette() -> None:
    status, body = cassette_response(find("openai-chat-error-404-model-not-found.cassette.yaml"))
    assert check_error_body_openai(body, status=status, expected={404})["code"] == "model_not_found"


def test_responses_400_model_not_found_is_a_400() -> None:
    body = read(find("openai-responses-error-400-model-not-found.json"))
    assert check_error_body_openai(body, status=400, expected=400)["param"] == "model"


@pytest.mark.parametrize(
    ("body", "hint"),
    [
        ({"error": "Invalid JSON in request body"}, "mlx-lm"),
        ({"detail": "x"}, "detail"),
        ({"detail": [{"loc": ["body"], "msg": "field required"}]}, "detail"),
        ({"message": "bad"}, "no `error` object"),
        (["error"], "list"),
        ("<html>500</html>", "not JSON"),
        (b"", "not JSON"),
    ],
    ids=["mlx-lm-string", "detail-string", "detail-list", "no-envelope", "list", "html", "empty"],
)
def test_peer_error_shapes_rejected_with_clear_message(body: Any, hint: str) -> None:
    with rejects("error_body_openai") as info:
        check_error_body_openai(body)
    assert hint in info.value.message
    assert "body" in info.value.evidence


MUTATIONS = {
    "no-type": lambda e: e.pop("type"),
    "no-message": lambda e: e.pop("message"),
    "empty-message": lambda e: e.update(message=""),
    "no-code": lambda e: e.pop("code"),
    "code-object": lambda e: e.update(code={"x": 1}),
    "param-number": lambda e: e.update(param=3),
}


@pytest.mark.parametrize("mutation", MUTATIONS.values(), ids=MUTATIONS.keys())
def test_broken_openai_error_rejected(mutation: Any) -> None:
    body = openai_body()
    mutation(body["error"])
    with rejects("error_body_openai"):
        check_error_body_openai(body)


def test_string_and_null_codes_accepted_an_integer_refused() -> None:
    """openai-openapi's Error schema: code is a nullable string."""
    for code in ("rate_limit_exceeded", None):
        body = openai_body()
        body["error"]["code"] = code
        check_error_body_openai(body)
    body = openai_body()
    body["error"]["code"] = 429
    with rejects("error_body_openai"):
        check_error_body_openai(body)


def test_status_checked_first() -> None:
    with rejects("error_status"):
        check_error_body_openai(openai_body(), status=400, expected=401)


def test_status_in_allowed_set() -> None:
    assert check_error_status(404, {400, 404}) == 404


def test_500_for_client_input_is_a_critical_failure() -> None:
    with rejects("error_status") as info:
        check_error_status(500, {400, 422})
    assert info.value.severity is Severity.CRITICAL


def test_500_only_where_the_spec_documents_it() -> None:
    # e.g. llama-server's /detokenize of an out-of-vocabulary id is specified as a 500
    assert check_error_status(500, 500) == 500


def test_422_where_400_expected_is_named() -> None:
    with rejects("error_status") as info:
        check_error_status(422, 400)
    assert "422" in info.value.message and "400" in info.value.message


def test_success_for_a_bad_request_is_lenient_not_a_fail() -> None:
    """docs/conformance/verdicts.md: accepting input the API calls invalid is LENIENT."""
    with pytest.raises(pytest.skip.Exception, match="LENIENT"):
        check_error_status(200, 400)
    with rejects("error_status") as info:
        check_error_status(200, 401)  # no key, served anyway: not leniency about input
    assert "accepted" in info.value.message


def test_anthropic_errors_accepted() -> None:
    assert check_error_body_anthropic(anthropic_body(), status=401, expected=401)["type"] == (
        "authentication_error"
    )
    status, body = cassette_response(find("anthropic-error-404-not-found.cassette.yaml"))
    check_error_body_anthropic(body, status=status, expected=404)
    ((status, body),) = [
        r
        for r in recording_responses(find("anthropic-sdk-recording-tool-use-then-400.json"))
        if r[0] == 400
    ]
    check_error_body_anthropic(body, status=status, expected=400)


ANTHROPIC_MUTATIONS = {
    "no-error-type": lambda b: b["error"].pop("type"),
    "no-message": lambda b: b["error"].pop("message"),
    "top-type": lambda b: b.update(type="message"),
    "no-top-type": lambda b: b.pop("type"),
    "string-error": lambda b: b.update(error="invalid x-api-key"),
    "request-id": lambda b: b.update(request_id=5),
}


@pytest.mark.parametrize("mutation", ANTHROPIC_MUTATIONS.values(), ids=ANTHROPIC_MUTATIONS.keys())
def test_broken_anthropic_error_rejected(mutation: Any) -> None:
    body = anthropic_body()
    mutation(body)
    with rejects("error_body_anthropic"):
        check_error_body_anthropic(body)


def test_openai_shape_on_anthropic_route_rejected() -> None:
    with rejects("error_body_anthropic"):
        check_error_body_anthropic(openai_body())


def test_anthropic_type_must_match_status() -> None:
    with rejects("error_body_anthropic") as info:
        check_error_body_anthropic(anthropic_body(), status=403, expected=403)
    assert info.value.severity is Severity.MEDIUM
