"""Checks on the OpenAI Audio transcription and translation bodies (Whisper-style servers),
and the small WAV clip the suite uploads."""

from __future__ import annotations

import io
import math
import struct
import wave
from typing import Any

from mlxcel_conformance.checks.openai_common import is_int
from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity

SEGMENT_FIELDS = ("id", "seek", "start", "end", "text", "tokens", "temperature", "avg_logprob",
                  "compression_ratio", "no_speech_prob")


def wav_clip(seconds: float = 1.0, hz: float = 440.0, rate: int = 16_000) -> bytes:
    """A mono 16-bit PCM tone: the one upload format every Whisper server reads."""
    frames = b"".join(
        struct.pack("<h", round(9830 * math.sin(2 * math.pi * hz * n / rate)))
        for n in range(int(seconds * rate)))
    return wav_file(frames, rate)


def wav_file(frames: bytes, rate: int, *, channels: int = 1, width: int = 2) -> bytes:
    """``frames`` (interleaved little-endian PCM, ``width`` bytes a sample) as a WAV file."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(width)
        out.setframerate(rate)
        out.writeframes(frames)
    return buffer.getvalue()


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_usage(name: str, body: dict[str, Any]) -> None:
    usage = body.get("usage")
    if usage is None:
        return
    if not isinstance(usage, dict) or usage.get("type") not in ("duration", "tokens"):
        fail(name, "usage must be an object of type duration or tokens", body=body)
    if usage.get("type") == "duration" and not (is_int(usage.get("seconds"))
                                                and usage["seconds"] >= 0):
        fail(name, "duration usage carries whole seconds", body=body)


@check("transcription_body_json", severity=Severity.HIGH,
       description="response_format json: an object with the text (and optional usage)")
def check_transcription_json(body: Any) -> str:
    if not isinstance(body, dict) or not isinstance(body.get("text"), str):
        fail("transcription_body_json", "the body must be an object with a string text",
             body=body)
    _check_usage("transcription_body_json", body)
    return str(body["text"])


@check("transcription_body_verbose", severity=Severity.HIGH,
       description="verbose_json: task, language, duration, text and well-formed segments")
def check_transcription_verbose(body: Any, task: str, duration: float) -> None:
    name = "transcription_body_verbose"
    if not isinstance(body, dict):
        fail(name, "the body must be an object", body=body)
    if body.get("task") != task:
        fail(name, f"task must be {task!r}", got=body.get("task"))
    if not isinstance(body.get("language"), str) or not isinstance(body.get("text"), str):
        fail(name, "language and text must be strings", body=body)
    if not _number(body.get("duration")) or abs(body["duration"] - duration) > 0.1:
        fail(name, f"duration must be the audio's length ({duration} s)", got=body.get("duration"))
    segments = body.get("segments")
    if not isinstance(segments, list):
        fail(name, "segments must be a list", body=body)
    for index, seg in enumerate(segments):
        missing = [f for f in SEGMENT_FIELDS if f not in seg]
        if missing:
            fail(name, f"segment {index} lacks {missing}", segment=seg)
        if seg["id"] != index or not 0 <= seg["start"] <= seg["end"]:
            fail(name, f"segment {index}: ids count from 0 and 0 <= start <= end", segment=seg)
    _check_usage(name, body)


@check("transcription_text_format", severity=Severity.MEDIUM,
       description="response_format text: the bare transcript as text/plain")
def check_transcription_text(content_type: str, text: str, json_text: str) -> None:
    if not content_type.startswith("text/plain"):
        fail("transcription_text_format", "text must be served as text/plain",
             content_type=content_type)
    if text.strip() != json_text.strip():
        fail("transcription_text_format", "text must equal the json body's text",
             text=text, json_text=json_text)
