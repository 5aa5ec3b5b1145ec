"""OpenAI text-to-speech (``POST /v1/audio/speech``) on a server with a speech model.

A server that answers the route with 501 has none: these features are UNSUPPORTED there (its
501 is checked by ``test_unconfigured_routes``). Run them against an audio-only mlxcel server
on a Kokoro checkpoint with ``--base-url URL --families audio``. The voice is the first of
``VOICES`` the server accepts. Inputs are a few characters: speech on a CPU is slow. The speech
goldens (recorded on the generated Kokoro fixture in its ``af_heart`` voice) are replayed behind
the same probe: ``shape`` mode, ``exact`` only with ``--goldens exact``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.speech import (
    check_speech_audible,
    check_speech_depends_on_input,
    check_speech_deterministic,
    check_speech_pcm,
    check_speech_sse,
    check_speech_wav,
)
from mlxcel_conformance.client import SuiteClient, expect_status
from mlxcel_conformance.flows import (
    check_schema_events,
    check_sse_content_type,
    openai_error,
)
from mlxcel_conformance.golden_media_cases import SPEECH_FIXTURE, SPEECH_VOICE
from mlxcel_conformance.goldens import family_golden_params, replay_golden
from mlxcel_conformance.sse import parse_sse

SPEECH = "/v1/audio/speech"
TEXT, OTHER_TEXT = "Hi.", "Go!"
VOICES = ("af_heart", "alloy")  # Kokoro's usual voice, then OpenAI's


def _body(client: SuiteClient, voice: str, fields: dict[str, Any]) -> dict[str, Any]:
    """A wav request for ``TEXT`` in ``voice``, with ``fields`` set (None: left out)."""
    body = {"model": client.model_for_requests() or "tts-1", "input": TEXT, "voice": voice,
            "response_format": "wav", **fields}
    return {key: value for key, value in body.items() if value is not None}


def serves_speech(client: SuiteClient) -> bool:
    """Whether the target speaks (anything but 501 to a request it must refuse: no synthesis)."""
    return client.probe("speech", lambda: client.post(
        SPEECH, _body(client, VOICES[0], {"speed": 100.0})).status_code != 501)


def speech_voice(client: SuiteClient) -> str:
    if not serves_speech(client):
        pytest.skip("UNSUPPORTED: the server has no speech model (the route answers 501)")
    for voice in VOICES:
        if client.probe(f"speech.voice.{voice}", _speaks_in(client, voice)):
            return voice
    pytest.fail(f"the server accepts none of the voices {', '.join(VOICES)}")


def _speaks_in(client: SuiteClient, voice: str) -> Callable[[], bool]:
    return lambda: client.post(SPEECH, _body(client, voice, {})).status_code == 200


def speak(client: SuiteClient, **fields: Any) -> httpx.Response:
    return client.post(SPEECH, _body(client, speech_voice(client), fields))


def audio(client: SuiteClient, **fields: Any) -> httpx.Response:
    response = speak(client, **fields)
    expect_status(response, 200)
    return response


def deterministic(client: SuiteClient) -> bool:
    return client.probe("speech.deterministic",
                        lambda: audio(client).content == audio(client).content)


@pytest.mark.conformance(family="audio", feature="audio.speech.wav")
def test_speech_wav(client: SuiteClient) -> None:
    response = audio(client)
    wav = check_speech_wav(response.headers.get("content-type", ""), response.content)
    check_speech_audible(wav.samples)


@pytest.mark.conformance(family="audio", feature="audio.speech.deterministic")
def test_speech_is_deterministic(client: SuiteClient) -> None:
    check_speech_deterministic(audio(client).content, audio(client).content)


@pytest.mark.conformance(family="audio", feature="audio.speech.depends_on_input")
def test_speech_depends_on_the_input(client: SuiteClient) -> None:
    check_speech_depends_on_input(audio(client).content, audio(client, input=OTHER_TEXT).content)


@pytest.mark.conformance(family="audio", feature="audio.speech.pcm")
def test_speech_pcm(client: SuiteClient) -> None:
    wav_response = audio(client)
    wav = check_speech_wav(wav_response.headers.get("content-type", ""), wav_response.content)
    pcm = audio(client, response_format="pcm")
    check_speech_pcm(pcm.headers.get("content-type", ""), pcm.content, wav,
                     deterministic(client))


@pytest.mark.conformance(family="audio", feature="audio.speech.sse")
def test_speech_sse(client: SuiteClient) -> None:
    voice = speech_voice(client)
    result = client.stream(SPEECH, _body(client, voice, {"stream_format": "sse"}))
    if result.status == 400 and "stream_format" in result.text:
        pytest.skip("UNSUPPORTED: the server does not stream speech as SSE")
    expect_status(result, 200)
    check_sse_content_type(result)
    check_schema_events("POST", SPEECH, result)
    check_speech_sse(parse_sse(result.text), audio(client).content, deterministic(client))


@pytest.mark.parametrize("doc", family_golden_params("audio", SPEECH_FIXTURE))
def test_speech_goldens(client: SuiteClient, model_name: str | None,
                        probed_golden_mode: str, doc: dict[str, Any]) -> None:
    """WAV, PCM (as digests), SSE, the 400s and the 415 against goldens recorded on the Kokoro
    fixture: shape mode (any Kokoro server), exact only when ``--goldens exact`` is asked for."""
    if speech_voice(client) != SPEECH_VOICE:
        pytest.skip(f"UNSUPPORTED: the speech goldens speak in {SPEECH_VOICE}, which the server "
                    "lacks")
    replay_golden(client, doc, model_name, probed_golden_mode)


def _error(response: httpx.Response, status: int = 400) -> dict[str, Any]:
    return openai_error(response, SPEECH, status)


INVALID = {
    "missing_input": {"input": None},
    "empty_input": {"input": ""},
    "input_too_long": {"input": "a" * 4097},
    "unknown_voice": {"voice": "no-such-voice"},
    "response_format": {"response_format": "ogg-please"},
    "speed": {"speed": 4.5},
}


@pytest.mark.parametrize("fields", [
    pytest.param(fields, id=name, marks=pytest.mark.conformance(
        family="audio", feature=f"audio.speech.errors.{name}"))
    for name, fields in INVALID.items()
])
def test_invalid_speech_request_is_400(client: SuiteClient, fields: dict[str, Any]) -> None:
    _error(speak(client, **fields))
