"""The audio-only server as the audio family decides it (``Family.sole_model``), where the
Whisper backend is not installed: the checkpoint's load is replaced by a ``WhisperModel`` with no
weights, which is all the gate, ``/health`` and ``/v1/models`` read. The routes that run Whisper
are tested on the committed fixture in ``test_audio_routes.py``."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from mlxcel.app import create_app
from mlxcel.config import ServerConfig
from mlxcel.families.audio import audio_service
from mlxcel.families.audio.audio_config import AudioConfig
from mlxcel.families.audio.whisper import WhisperModel

from .audio_samples import error_of


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    checkpoint = tmp_path_factory.mktemp("audio") / "whisper-stand-in"  # named as a directory
    checkpoint.mkdir()
    loads: list[str] = []

    def load(path: str) -> WhisperModel:
        loads.append(path)
        return WhisperModel(name="whisper-stand-in", path=path,
                            model=SimpleNamespace(is_multilingual=False))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(audio_service, "load_audio_model", load)
        audio = AudioConfig(model=str(checkpoint), max_queue=2)
        config = ServerConfig(model="no-text-model", sections={"audio": audio})
        with TestClient(create_app(config)) as test_client:
            assert loads == [str(checkpoint)]
            yield test_client


def test_no_text_model_is_loaded(client: TestClient) -> None:
    state = client.app.state.mlxcel  # type: ignore[attr-defined]
    assert state.sole_model is not None and not state.engine.started
    assert set(state.services.parts) >= {"audio"}


def test_health_and_models_name_the_audio_model(client: TestClient) -> None:
    health = client.get("/health")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "model": "whisper-stand-in",
                             "audio": {"queue_depth": 0, "max_queue": 2, "timeout_s": 300.0}}
    assert client.get("/v1/models").json()["data"][0]["id"] == "whisper-stand-in"


def test_other_routes_are_501_in_their_family_shape(client: TestClient) -> None:
    chat = error_of(client.post("/v1/chat/completions", json={"messages": []}), 501)
    assert chat["type"] == "not_implemented"
    assert chat["message"].startswith("POST /v1/chat/completions is not served: this is an "
                                      "audio-only server that loaded the Whisper checkpoint "
                                      "whisper-stand-in.")
    assert "POST /v1/audio/transcriptions" in chat["message"]
    native = client.post("/completion", json={"prompt": "hi"})  # llama-server's shape
    assert native.status_code == 501
    assert native.json()["error"]["code"] == 501
    assert native.json()["error"]["type"] == "not_supported_error"
    realtime = error_of(client.get("/v1/realtime"), 501)
    assert realtime["message"].endswith("needs a Nemotron VoiceChat checkpoint.")
    speech = error_of(client.post("/v1/audio/speech", json={"input": "hi"}), 501)
    assert "Kokoro" in speech["message"]  # the family's own route answers for itself
    images = error_of(client.post("/v1/images/generations", json={"prompt": "x"}), 501)
    assert "--image-model" in images["message"] and "audio-only" not in images["message"]
    assert client.get("/no/such/route").status_code == 404
