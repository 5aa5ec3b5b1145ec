"""POST /tokenize and POST /detokenize (llama-server's shapes)."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_llama, check_error_status
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import check_schema, response_of

TEXT = "Hello, world! こんにちは 👋"


def _tokenize(client: SuiteClient, **fields: object) -> list[int]:
    response = client.post("/tokenize", {"content": TEXT, **fields})
    expect_status(response, 200)
    body = json_body(response)
    check_schema("POST", "/tokenize", 200, body)
    tokens: list[int] = body["tokens"]
    return tokens


@pytest.mark.conformance(family="tokenize", feature="tokenize.round_trip")
def test_tokenize_detokenize_round_trip(client: SuiteClient) -> None:
    tokens = _tokenize(client)
    response = client.post("/detokenize", {"tokens": tokens})
    expect_status(response, 200)
    body = json_body(response)
    check_schema("POST", "/detokenize", 200, body)
    if body.get("content") != TEXT:
        fail(
            "tokenize_round_trip",
            "detokenize(tokenize(text)) != text",
            text=TEXT,
            tokens=tokens,
            content=body.get("content"),
        )


@pytest.mark.conformance(family="tokenize", feature="tokenize.with_pieces")
def test_tokenize_with_pieces(client: SuiteClient) -> None:
    plain = _tokenize(client)
    response = client.post("/tokenize", {"content": TEXT, "with_pieces": True})
    expect_status(response, 200)
    pieces = json_body(response)["tokens"]
    if [p.get("id") if isinstance(p, dict) else None for p in pieces] != plain:
        fail(
            "tokenize_pieces",
            "with_pieces ids differ from the plain ids",
            plain=plain,
            pieces=pieces,
        )


@pytest.mark.conformance(family="tokenize", feature="tokenize.detokenize_out_of_vocab",
                         extension="refusals")
def test_detokenize_out_of_vocabulary_is_500(client: SuiteClient) -> None:
    status, body = response_of(client.post("/detokenize", {"tokens": [1, 2**40]}))
    error = check_error_body_llama(body, status=status, expected=500)
    if error.get("type") != "server_error" or "out of vocabulary range" not in error["message"]:
        fail("detokenize_oov", "expected server_error naming the out-of-vocabulary id", body=body)


BAD_INPUT = [{}, {"content": 5}, {"tokens": "abc"}]
BAD_IDS = ["missing", "content_number", "wrong_route_field"]


def request_case(payload: dict[str, object]) -> str:
    return BAD_IDS[BAD_INPUT.index(payload)]


@pytest.mark.conformance(family="tokenize", feature="tokenize.errors.no_crash")
@pytest.mark.parametrize("payload", BAD_INPUT, ids=BAD_IDS)
def test_tokenize_bad_input_is_no_server_error(client: SuiteClient,
                                               payload: dict[str, object]) -> None:
    """llama-server's README documents no status for bad input; a 5xx for the client's own
    mistake is wrong by RFC 9110 (4xx: the client erred)."""
    path = "/detokenize" if "tokens" in payload else "/tokenize"
    status, body = response_of(client.post(path, payload))
    if status >= 500:
        check_error_status(status, (400, 422), case=request_case(payload),
                           source="RFC 9110, 15.5 and 15.6: a client's mistake is a 4xx, "
                           "not a 5xx")


@pytest.mark.conformance(family="tokenize", feature="tokenize.errors", extension="refusals")
@pytest.mark.parametrize("payload", BAD_INPUT, ids=BAD_IDS)
def test_tokenize_bad_input_is_400(client: SuiteClient, payload: dict[str, object]) -> None:
    path = "/detokenize" if "tokens" in payload else "/tokenize"
    status, body = response_of(client.post(path, payload))
    check_error_body_llama(body, status=status, expected=400)
