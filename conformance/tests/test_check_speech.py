"""Tests for checks/speech.py: each check passes real audio answers and fails on the behaviour
it names."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

from real_stream_corpus import rejects

from mlxcel_conformance.checks.audio import wav_file
from mlxcel_conformance.checks.speech import (
    check_speech_audible,
    check_speech_depends_on_input,
    check_speech_deterministic,
    check_speech_pcm,
    check_speech_sse,
    check_speech_wav,
)
from mlxcel_conformance.sse import parse_sse

SAMPLES = struct.pack("<4h", 0, 5000, -5000, 1200)


def wav(samples: bytes = SAMPLES, rate: int = 24_000, channels: int = 1, width: int = 2) -> bytes:
    return wav_file(samples, rate, channels=channels, width=width)


def sse(*payloads: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(p)}\n\n" for p in payloads)


def test_wav_format() -> None:
    audio = check_speech_wav("audio/wav", wav())
    assert (audio.rate, audio.frames, audio.samples) == (24_000, 4, SAMPLES)
    for content_type, body in [
        ("audio/mpeg", wav()),
        ("audio/wav", b"ID3" + wav()),
        ("audio/wav", wav(SAMPLES * 2, channels=2)),
        ("audio/wav", wav(b"\0\0\0\0" * 4, width=4)),
        ("audio/wav", wav(rate=2_000)),
        ("audio/wav", wav()[:-2]),
    ]:
        with rejects("speech_wav_format"):
            check_speech_wav(content_type, body)


def test_audible() -> None:
    check_speech_audible(SAMPLES)
    for samples in (b"", b"\0\0" * 100, struct.pack("<3h", 3, -5, 8)):
        with rejects("speech_audible"):
            check_speech_audible(samples)


def test_determinism_and_input_dependence() -> None:
    check_speech_deterministic(b"a", b"a")
    check_speech_depends_on_input(b"a", b"b")
    with rejects("speech_deterministic"):
        check_speech_deterministic(b"a", b"b")
    with rejects("speech_depends_on_input"):
        check_speech_depends_on_input(b"a", b"a")


def test_pcm_format() -> None:
    audio = check_speech_wav("audio/wav", wav())
    check_speech_pcm("audio/pcm", SAMPLES, audio, deterministic=True)
    check_speech_pcm("audio/pcm", SAMPLES[:4], audio, deterministic=False)
    for content_type, pcm in [("audio/wav", SAMPLES), ("audio/pcm", wav()), ("audio/pcm", b""),
                              ("audio/pcm", SAMPLES[:3]), ("audio/pcm", SAMPLES[:4])]:
        with rejects("speech_pcm_format"):
            check_speech_pcm(content_type, pcm, audio, deterministic=True)


def test_sse_events() -> None:
    audio = b"0123456789"
    delta = [{"type": "speech.audio.delta", "audio": base64.b64encode(part).decode()}
             for part in (audio[:6], audio[6:])]
    done = {"type": "speech.audio.done",
            "usage": {"input_tokens": 3, "output_tokens": 7, "total_tokens": 10}}
    check_speech_sse(parse_sse(sse(*delta, done)), audio, deterministic=True)
    check_speech_sse(parse_sse(sse(delta[0], done)), audio, deterministic=False)
    for stream in [
        sse(*delta),  # no done
        sse(done),  # no audio
        sse(*delta, done, done),
        sse(done, *delta),
        sse({"type": "speech.audio.delta", "audio": "%%%"}, done),
        sse(*delta, {"type": "speech.audio.done"}),
        sse(*delta, {**done, "usage": {"input_tokens": 3, "output_tokens": 7,
                                       "total_tokens": 11}}),
        sse(delta[0], done),  # does not join into the audio
        "data: not json\n\n",
    ]:
        with rejects("speech_sse_events"):
            check_speech_sse(parse_sse(stream), audio, deterministic=True)
