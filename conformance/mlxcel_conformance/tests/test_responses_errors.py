"""Bad input to the Responses routes: documented 400/404s in the OpenAI shape, never a 500."""

from __future__ import annotations

from typing import Any

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.flows import response_of, with_model
from mlxcel_conformance.flows_typed import RESPONSES_PATH, responses_payload
from mlxcel_conformance.readers import read_response
from mlxcel_conformance.surfaces import require_response_store

IMAGE = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
FILE = {"type": "input_file", "file_id": "file-123"}

BAD_BODIES: dict[str, dict[str, Any]] = {
    "input_missing": {"max_output_tokens": 4},
    "input_number": {"input": 42},
    "max_output_tokens_zero": {"input": "hi", "max_output_tokens": 0},
    "unknown_item": {"input": [{"type": "wizardry"}]},
    "tool_choice_unknown_function": {
        "input": "hi", "tool_choice": {"type": "function", "name": "nope"},
    },
    "previous_and_conversation": {
        "input": "hi", "previous_response_id": "resp_x", "conversation": "conv_x",
    },
    "stream_string": {"input": "hi", "stream": "yes"},
}


@pytest.mark.conformance(family="responses", feature="responses.errors.invalid_body",
                         destructive=True)
@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_responses_invalid_body_is_400(client: SuiteClient, model_name: str | None,
                                       case: str) -> None:
    if "previous_response_id" in BAD_BODIES[case]:
        require_response_store(client, model_name)  # no previous_response_id without a store
    status, body = response_of(client.post(RESPONSES_PATH, with_model(model_name,
                                                                      BAD_BODIES[case])))
    check_error_body_openai(body, status=status, expected=400, case=case,
        source="OpenAI API reference, Responses request body; Error codes: 400")


# Requests OpenAI's API serves but the reference refuses with its documented 400s.
REFUSED_BODIES: dict[str, dict[str, Any]] = {
    "builtin_tool": {"input": "hi", "tools": [{"type": "web_search"}]},
    "code_interpreter": {"input": "hi", "tools": [{"type": "code_interpreter"}]},
    "input_file": {"input": [{"role": "user", "content": [FILE]}]},
    "input_image_text_only": {"input": [{"role": "user", "content": [IMAGE]}]},
    "truncation_auto": {"input": "hi", "truncation": "auto"},
}


@pytest.mark.conformance(family="responses", feature="responses.errors.refused",
                         extension="refusals")
@pytest.mark.parametrize("case", sorted(REFUSED_BODIES))
def test_responses_refused_body_is_400(client: SuiteClient, model_name: str | None,
                                       case: str) -> None:
    status, body = response_of(client.post(RESPONSES_PATH, with_model(model_name,
                                                                      REFUSED_BODIES[case])))
    check_error_body_openai(body, status=status, expected=400)


@pytest.mark.conformance(family="responses", feature="responses.errors.previous_not_found",
                         destructive=True)
def test_responses_unknown_previous_id(client: SuiteClient, model_name: str | None) -> None:
    require_response_store(client, model_name)
    payload = responses_payload(model_name, previous_response_id="resp_does_not_exist")
    status, body = response_of(client.post(RESPONSES_PATH, payload))
    error = check_error_body_openai(body, status=status, expected=400)
    if error.get("param") != "previous_response_id":
        fail("error_body_openai", "the error should name param previous_response_id",
             error=error)


@pytest.mark.conformance(family="responses", feature="responses.errors.unknown_id",
                         destructive=True)
@pytest.mark.parametrize("method", ["GET", "DELETE", "POST"])
def test_responses_unknown_id_is_404(client: SuiteClient, model_name: str | None,
                                     method: str) -> None:
    require_response_store(client, model_name)
    path = f"{RESPONSES_PATH}/resp_does_not_exist" + ("/cancel" if method == "POST" else "")
    status, body = response_of(client.http.request(method, path))
    check_error_body_openai(body, status=status, expected=404)


@pytest.mark.conformance(family="responses", feature="responses.errors.malformed_json",
                         destructive=True)
def test_responses_malformed_json(client: SuiteClient, model_name: str | None) -> None:
    status, body = response_of(client.post_raw(RESPONSES_PATH, b"{not json"))
    check_error_body_openai(body, status=status, expected=400, case="malformed JSON",
                            source="OpenAI API reference, Error codes: 400 (the request body "
                            "was malformed)")
    read_response(client, responses_payload(model_name))  # still serving
