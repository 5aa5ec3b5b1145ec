"""OpenAI Audio transcriptions and translations on a server with a Whisper model.

A server that answers the transcription route with 501 has no audio model: these features
are UNSUPPORTED there (its 501 is checked by ``test_unconfigured_routes``). Run them against
an audio-only mlxcel server with ``--base-url URL --families audio``. The audio goldens
(recorded on the Whisper fixture) are replayed here behind the same probe: ``shape`` mode,
``exact`` only with ``--goldens exact``.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from mlxcel_conformance.checks.audio import (
    check_transcription_json,
    check_transcription_text,
    check_transcription_verbose,
    wav_clip,
)
from mlxcel_conformance.client import SuiteClient, expect_status, json_body
from mlxcel_conformance.flows import check_schema, openai_error
from mlxcel_conformance.golden_cases import AUDIO_FIXTURE
from mlxcel_conformance.goldens import family_golden_params, replay_golden

TRANSCRIBE = "/v1/audio/transcriptions"
TRANSLATE = "/v1/audio/translations"
CLIP = wav_clip()
# One decode at a fixed temperature keeps a tiny or random model's answer quick.
FIELDS = {"model": "whisper-1", "temperature": "0.2"}
LIMIT = 25 * 1024 * 1024


def upload(client: SuiteClient, path: str = TRANSCRIBE, audio: bytes = CLIP,
           name: str = "clip.wav", **fields: str) -> httpx.Response:
    model = client.model_for_requests() or FIELDS["model"]
    return client.post(path, files={"file": (name, audio, "audio/wav")},
                       data={**FIELDS, "model": model, **fields})



def serves_audio(client: SuiteClient) -> bool:
    """Whether the target transcribes (anything but 501 to a valid upload)."""
    return client.probe("audio", lambda: upload(client).status_code != 501)


def require_audio(client: SuiteClient) -> None:
    if not serves_audio(client):
        pytest.skip("UNSUPPORTED: the server has no audio model (transcription answers 501)")


def _json(response: httpx.Response, path: str) -> Any:
    expect_status(response, 200)
    body = json_body(response)
    check_schema("POST", path, 200, body)
    return body


@pytest.mark.conformance(family="audio", feature="audio.transcriptions.json")
def test_transcription_json(client: SuiteClient) -> None:
    require_audio(client)
    check_transcription_json(_json(upload(client), TRANSCRIBE))


@pytest.mark.conformance(family="audio", feature="audio.transcriptions.verbose_json")
def test_transcription_verbose_json(client: SuiteClient) -> None:
    require_audio(client)
    body = _json(upload(client, response_format="verbose_json"), TRANSCRIBE)
    check_transcription_verbose(body, "transcribe", 1.0)


@pytest.mark.conformance(family="audio", feature="audio.transcriptions.text")
def test_transcription_text(client: SuiteClient) -> None:
    require_audio(client)
    text = check_transcription_json(_json(upload(client), TRANSCRIBE))
    response = upload(client, response_format="text")
    expect_status(response, 200)
    check_transcription_text(response.headers.get("content-type", ""), response.text, text)


@pytest.mark.conformance(family="audio", feature="audio.translations.verbose_json")
def test_translation_verbose_json(client: SuiteClient) -> None:
    require_audio(client)
    body = _json(upload(client, TRANSLATE, response_format="verbose_json"), TRANSLATE)
    check_transcription_verbose(body, "translate", 1.0)


def _error(response: httpx.Response, status: int, path: str = TRANSCRIBE) -> dict[str, Any]:
    return openai_error(response, path, status)


@pytest.mark.conformance(family="audio", feature="audio.errors.missing_file")
def test_missing_file_is_400(client: SuiteClient) -> None:
    require_audio(client)
    _error(client.post(TRANSCRIBE, data=FIELDS, files={"other": ("x.txt", b"x")}), 400)


@pytest.mark.conformance(family="audio", feature="audio.errors.bad_audio")
def test_undecodable_audio_is_400(client: SuiteClient) -> None:
    require_audio(client)
    _error(upload(client, audio=b"RIFF\x04\x00\x00\x00WAVE"), 400)


@pytest.mark.conformance(family="audio", feature="audio.errors.response_format")
def test_unknown_response_format_is_400(client: SuiteClient) -> None:
    require_audio(client)
    _error(upload(client, response_format="mp3-please"), 400)


@pytest.mark.conformance(family="audio", feature="audio.errors.too_large")
def test_upload_over_25_mib_is_413(client: SuiteClient) -> None:
    require_audio(client)
    _error(upload(client, audio=CLIP + b"\0" * (LIMIT + 1 - len(CLIP))), 413)


@pytest.mark.parametrize("doc", family_golden_params("audio", AUDIO_FIXTURE))
def test_audio_goldens(client: SuiteClient, model_name: str | None,
                       probed_golden_mode: str, doc: dict[str, Any]) -> None:
    """Transcriptions (json, verbose_json, text, srt, vtt), translations and the upload errors
    against goldens recorded on the Whisper fixture: shape mode (any Whisper server), exact
    only when ``--goldens exact`` is asked for."""
    require_audio(client)
    replay_golden(client, doc, model_name, probed_golden_mode)
