"""Audio, image and realtime routes on a server without their model: 501 ``not_implemented``
whose message names what enables the route (the reference's honest answer, never a 404 or 200)."""

from __future__ import annotations

import pytest

from mlxcel_conformance.checks.errors_checks import check_error_body_openai
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.client import SuiteClient
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.flows import check_schema, response_of
from mlxcel_conformance.tests.test_audio import serves_audio
from mlxcel_conformance.tests.test_audio_speech import serves_speech
from mlxcel_conformance.tests.test_images import serves_images

ROUTES = [
    *[("audio", "POST", f"{prefix}/audio/{route}", "--audio-model")
      for prefix in ("/v1", "") for route in ("speech", "transcriptions", "translations")],
    *[("images", "POST", f"{prefix}/images/{route}", "--image-model")
      for prefix in ("/v1", "") for route in ("generations", "edits")],
    ("realtime", "GET", "/v1/realtime", "VoiceChat"),
]


@check("unconfigured_route_501", severity=Severity.HIGH,
       description="A route without its model answers 501 not_implemented naming what enables it")
def check_unconfigured_route(status: int, body: object, enabler: str) -> None:
    error = check_error_body_openai(body, status=status, expected=501)
    if error.get("type") != "not_implemented":
        fail("unconfigured_route_501", f"type is {error.get('type')!r}, not 'not_implemented'",
             body=body)
    if enabler not in error["message"]:
        fail("unconfigured_route_501", f"the message does not name {enabler!r}", body=body)


@pytest.mark.parametrize(
    ("family", "method", "path", "enabler"),
    [pytest.param(*route, id=route[2],
                  marks=pytest.mark.conformance(family=route[0],
                                                feature=f"{route[0]}.unconfigured_501"))
     for route in ROUTES],
)
def test_route_without_its_model_is_501(client: SuiteClient, family: str, method: str,
                                        path: str, enabler: str) -> None:
    if path.endswith(("/transcriptions", "/translations")) and serves_audio(client):
        pytest.skip("UNSUPPORTED: the server has an audio model (see test_audio)")
    if path.endswith("/speech") and serves_speech(client):
        pytest.skip("UNSUPPORTED: the server has a speech model (see test_audio_speech)")
    if family == "images" and serves_images(client):
        pytest.skip("UNSUPPORTED: the server has an image model (see test_images)")
    if method == "GET":
        response = client.get(path)
    else:
        response = client.post(path, {"model": "any", "input": "hello", "prompt": "a cat"})
    status, body = response_of(response)
    check_unconfigured_route(status, body, enabler)
    check_schema(method, path, status, body)
