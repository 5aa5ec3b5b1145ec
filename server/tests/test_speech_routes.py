"""The audio-only server on the generated Kokoro fixture: speech in every format, through raw
HTTP and the openai SDK, determinism, the voices' languages, the errors and the worker queue.

The fixture's weights are random: its speech is noise, so the tests assert containers, lengths,
determinism, and that other text, voices or speeds give other audio (it went through the
model). Nothing is mocked. Inputs are a few characters: each synthesis takes about a second on
a CPU.
"""

from __future__ import annotations

import base64
import io
import json
import threading
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

pytest.importorskip("misaki")

from mlxcel.app import create_app  # noqa: E402
from mlxcel.config import ServerConfig  # noqa: E402
from mlxcel.families.audio.audio_config import AudioConfig

from .audio_samples import error_of  # noqa: E402

SPEECH = "/v1/audio/speech"
HI = {"model": "kokoro", "input": "Hi.", "voice": "af_heart"}


def speech_app(checkpoint: Path, **overrides: Any) -> TestClient:
    audio = AudioConfig(model=str(checkpoint), **overrides)
    config = ServerConfig(model=str(checkpoint), sections={"audio": audio})
    return TestClient(create_app(config))


@pytest.fixture(scope="module")
def client(kokoro_checkpoint: Path) -> Iterator[TestClient]:
    with speech_app(kokoro_checkpoint) as c:
        yield c


def speak(client: TestClient, path: str = SPEECH, **fields: Any) -> httpx.Response:
    response = client.post(path, json={**HI, "response_format": "wav", **fields})
    assert response.status_code == 200, response.text
    return response


def wav_of(body: bytes) -> tuple[int, int, int, bytes]:
    with wave.open(io.BytesIO(body)) as audio:
        frames = audio.readframes(audio.getnframes())
        return audio.getnchannels(), audio.getsampwidth(), audio.getframerate(), frames


def test_wav_is_deterministic_and_depends_on_the_text(client: TestClient) -> None:
    first, again = speak(client), speak(client)
    assert first.headers["content-type"] == "audio/wav"
    channels, width, rate, samples = wav_of(first.content)
    assert (channels, width, rate) == (1, 2, 24_000) and len(samples) > 0
    assert max(abs(v) for v in memoryview(samples).cast("h")) > 1000  # not silence
    assert again.content == first.content
    assert speak(client, input="Go!").content != first.content


def test_pcm_is_the_wav_samples(client: TestClient) -> None:
    pcm = speak(client, response_format="pcm")
    assert pcm.headers["content-type"] == "audio/pcm"
    assert pcm.content == wav_of(speak(client).content)[3]


@pytest.mark.parametrize(("fmt", "media", "magic"), [
    ("mp3", "audio/mpeg", b"\xff"), ("flac", "audio/flac", b"fLaC"),
    ("opus", "audio/opus", b"OggS"),
])
def test_encoded_formats(client: TestClient, fmt: str, media: str, magic: bytes) -> None:
    response = speak(client, response_format=fmt)
    assert response.headers["content-type"] == media and response.content.startswith(magic)


def test_mp3_is_the_default(client: TestClient) -> None:
    response = client.post(SPEECH, json=HI)
    assert response.status_code == 200 and response.headers["content-type"] == "audio/mpeg"


def test_sse_carries_the_same_audio_then_usage(client: TestClient) -> None:
    response = speak(client, response_format="pcm", stream_format="sse")
    assert response.headers["content-type"].startswith("text/event-stream")
    events = [json.loads(line[len("data: "):]) for line in response.text.splitlines()
              if line.startswith("data: ")]
    assert [e["type"] for e in events[:-1]] == ["speech.audio.delta"] * (len(events) - 1)
    audio = b"".join(base64.b64decode(e["audio"]) for e in events[:-1])
    assert audio == speak(client, response_format="pcm").content
    usage = events[-1]["usage"]
    assert events[-1]["type"] == "speech.audio.done" and usage["input_tokens"] == len("hˈI.")
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"] > 0


def test_alias_voice_object_and_ignored_instructions(client: TestClient) -> None:
    reference = speak(client).content
    alias = speak(client, "/audio/speech", voice={"id": "af_heart"},
                  instructions="Speak like a pirate.")
    assert alias.content == reference


def test_each_voice_speaks_its_language(client: TestClient) -> None:
    american = speak(client, input="Water.").content
    british = speak(client, input="Water.", voice="bf_emma").content
    french = speak(client, input="Water.", voice="ff_siwis").content
    assert len({american, british, french}) == 3


def test_a_slower_speed_gives_longer_audio(client: TestClient) -> None:
    normal = len(wav_of(speak(client).content)[3])
    assert len(wav_of(speak(client, speed=0.5).content)[3]) > normal


def test_openai_sdk(client: TestClient) -> None:
    from openai import BadRequestError, OpenAI

    sdk = OpenAI(api_key="unused", base_url=f"{client.base_url}/v1", http_client=client)
    response = sdk.audio.speech.create(model="kokoro", voice="af_heart", input="Hi.",
                                       response_format="wav")
    assert response.content == speak(client).content
    with pytest.raises(BadRequestError, match="Unknown voice 'alloy'"):
        sdk.audio.speech.create(model="kokoro", voice="alloy", input="Hi.")


@pytest.mark.parametrize(("fields", "param", "words"), [
    ({"input": ""}, "input", "must not be empty"),
    ({"input": "   "}, "input", "must not be empty"),
    ({"input": "a" * 4097}, "input", "maximum is 4096"),
    ({"input": None}, "input", "Missing required parameter"),
    ({"input": 3}, "input", "Invalid value"),
    ({"voice": "alloy"}, "voice", "af_heart, bf_emma, ff_siwis"),
    ({"voice": None}, "voice", "Missing required parameter"),
    ({"model": None}, "model", "Missing required parameter"),
    ({"response_format": "aac"}, "response_format", "mp3, opus, flac, wav, pcm"),
    ({"response_format": "ogg"}, "response_format", "not supported"),
    ({"speed": 4.5}, "speed", "between 0.25 and 4.0"),
    ({"speed": 0.1}, "speed", "between 0.25 and 4.0"),
    ({"speed": "fast"}, "speed", "Invalid value"),
    ({"stream_format": "websocket"}, "stream_format", "audio, sse"),
])
def test_invalid_fields_are_400(client: TestClient, fields: dict[str, Any], param: str,
                                words: str) -> None:
    body = {k: v for k, v in {**HI, **fields}.items() if v is not None}
    error = error_of(client.post(SPEECH, json=body), 400)
    assert error["type"] == "invalid_request_error" and error["param"] == param
    assert words in error["message"]


def test_body_errors(client: TestClient) -> None:
    form = client.post(SPEECH, data={"input": "Hi.", "voice": "af_heart"})
    error = error_of(form, 415)
    assert error["code"] == "unsupported_media_type" and "JSON" in error["message"]
    broken = client.post(SPEECH, content=b"{nope", headers={"content-type": "application/json"})
    assert "not valid JSON" in error_of(broken, 400)["message"]
    assert error_of(client.post(SPEECH, json=["Hi."]), 400)["type"] == "invalid_request_error"


def test_a_kokoro_server_answers_501_elsewhere(client: TestClient) -> None:
    for route in ("transcriptions", "translations"):
        error = error_of(client.post(f"/v1/audio/{route}", files={"file": ("a.wav", b"x")}), 501)
        assert error["type"] == "not_implemented"
        assert "Whisper checkpoint" in error["message"] and "--audio-model" in error["message"]
        assert "serves POST /v1/audio/speech" in error["message"]
    chat = error_of(client.post("/v1/chat/completions", json={"messages": []}), 501)
    assert "Kokoro checkpoint" in chat["message"] and "/v1/audio/speech" in chat["message"]
    assert client.get("/no/such/route").status_code == 404
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["model"] == client.get(
        "/v1/models").json()["data"][0]["id"]


def test_a_full_queue_is_503(kokoro_checkpoint: Path) -> None:
    with speech_app(kokoro_checkpoint, max_queue=0) as client:
        results: list[int] = []
        thread = threading.Thread(target=lambda: results.append(client.post(
            SPEECH, json={**HI, "input": "Hello there, how are you today?"}).status_code))
        thread.start()
        deadline = time.monotonic() + 30
        while client.get("/health").json()["audio"]["queue_depth"] == 0:
            assert time.monotonic() < deadline, "the long request never started"
            time.sleep(0.01)
        error = error_of(client.post(SPEECH, json=HI), 503)
        assert error["type"] == "server_busy" and "queue is full" in error["message"]
        thread.join(120)
        assert results == [200]


def test_a_request_past_its_timeout_is_504(kokoro_checkpoint: Path) -> None:
    with speech_app(kokoro_checkpoint, timeout_s=0.05) as client:
        error = error_of(client.post(SPEECH, json=HI), 504)
        assert error["type"] == "timeout_error" and "--audio-timeout" in error["message"]
