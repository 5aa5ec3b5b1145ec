"""The uploads of multipart golden cases: described in the golden, rebuilt byte-identical."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from mlxcel_conformance.checks.audio import wav_clip
from mlxcel_conformance.errors import SetupError
from mlxcel_conformance.golden_uploads import (
    multipart_request,
    recorded_multipart,
    upload_bytes,
)
from mlxcel_conformance.goldens import load_documents

TONE = {"filename": "clip.wav", "content_type": "audio/wav",
        "wav_tone": {"seconds": 0.1, "hz": 440.0}}


def test_a_tone_spec_builds_the_suite_wav_clip() -> None:
    assert upload_bytes(TONE) == wav_clip(seconds=0.1, hz=440.0)


def test_text_and_zero_padding() -> None:
    spec = {"filename": "a.txt", "content_type": "text/plain", "text": "abc", "zero_pad_to": 6}
    assert upload_bytes(spec) == b"abc\0\0\0"


def test_the_recorded_spec_carries_size_and_digest() -> None:
    recorded = recorded_multipart({"fields": {"response_format": "json"}, "file": TONE})
    data = wav_clip(seconds=0.1, hz=440.0)
    assert recorded["fields"] == {"response_format": "json"}
    assert recorded["file"]["bytes"] == len(data)
    assert recorded["file"]["sha256"] == hashlib.sha256(data).hexdigest()
    assert upload_bytes(recorded["file"]) == data
    # re-recording a recorded spec gives the same spec
    assert recorded_multipart(recorded) == recorded


def test_a_changed_generator_asks_for_a_re_record() -> None:
    spec = {**recorded_multipart({"file": TONE})["file"], "sha256": "0" * 64}
    with pytest.raises(SetupError, match="re-record"):
        upload_bytes(spec)


def test_the_model_joins_the_fields_unless_one_is_set() -> None:
    request = multipart_request({"fields": {"temperature": "0"}, "file": TONE}, "whisper-1")
    assert request["data"] == {"temperature": "0", "model": "whisper-1"}
    name, data, content_type = request["files"]["file"]
    assert (name, content_type) == ("clip.wav", "audio/wav") and data.startswith(b"RIFF")
    pinned = multipart_request({"fields": {"model": "m"}, "file": TONE}, "whisper-1")
    assert pinned["data"] == {"model": "m"}
    assert multipart_request({"file": TONE}, None)["data"] == {}


def test_committed_multipart_goldens_rebuild_their_uploads() -> None:
    specs = [doc["request"]["multipart"]["file"] for _, doc in load_documents()
             if "multipart" in doc["request"]]
    assert specs, "no multipart goldens committed"
    for spec in specs:
        assert len(upload_bytes(spec)) == spec["bytes"]


def test_an_audio_reference_server_loads_only_the_whisper_checkpoint() -> None:
    from mlxcel_conformance.target import ReferenceServer

    cmd = ReferenceServer(audio_model="/w", model="/ignored").command()
    assert cmd[cmd.index("--audio-model") + 1] == "/w"
    assert not {"--model", "--embedding-model", "--rerank-model"} & set(cmd)


def test_each_media_fixture_is_recorded_on_its_own_server() -> None:
    """The Z-Image fixture beside the default text model; Whisper's audio-only."""
    from mlxcel_conformance.record_goldens import _server

    images = _server("zimage-tiny").command()
    assert images[images.index("--image-model") + 1].endswith("zimage-tiny")
    assert "--model" not in images and "--audio-model" not in images  # the default text model
    whisper = _server("whisper-tiny-random").command()
    assert "--audio-model" in whisper and "--image-model" not in whisper


def test_the_speech_fixture_is_the_directory_its_builder_prints(tmp_path: Path) -> None:
    """record_goldens runs the checkout's Kokoro builder as a script (never imports it) and
    takes the directory from its ``DIR (N bytes)`` line."""
    from mlxcel_conformance.record_goldens import built_speech_fixture

    builder = tmp_path / "build.py"
    built = tmp_path / "kokoro tiny-abc"  # a space in the path survives
    builder.write_text(f"print('building')\nprint({str(built)!r} + ' (1,234 bytes)')\n")
    assert built_speech_fixture(builder) == built
    with pytest.raises(SystemExit, match="--speech-fixture"):
        built_speech_fixture(tmp_path / "absent.py")
