"""Checks on OpenAI text-to-speech answers (``POST /v1/audio/speech``): the WAV container, the
headerless ``pcm`` samples, audible and input-dependent audio, and the ``sse`` event stream."""

from __future__ import annotations

import base64
import binascii
import io
import json
import wave
from dataclasses import dataclass
from typing import Any

from mlxcel_conformance.checks.registry import check, fail
from mlxcel_conformance.errors import Severity
from mlxcel_conformance.sse import SSEStream

PCM_SAMPLE_RATE = 24_000  # OpenAI's pcm: 24 kHz, 16-bit signed little-endian, mono
# A 16-bit sample this far from zero is audible (about -60 dBFS).
AUDIBLE = 32


@dataclass(frozen=True)
class WavAudio:
    rate: int
    frames: int
    samples: bytes  # the data chunk: 16-bit little-endian mono


@check("speech_wav_format", severity=Severity.HIGH,
       description="response_format wav: a RIFF/WAVE file of 16-bit mono PCM, served as audio/wav")
def check_speech_wav(content_type: str, body: bytes) -> WavAudio:
    name = "speech_wav_format"
    if not content_type.startswith(("audio/wav", "audio/x-wav", "audio/wave")):
        fail(name, "wav must be served as audio/wav", content_type=content_type)
    if body[:4] != b"RIFF" or body[8:12] != b"WAVE":
        fail(name, "the body is not a RIFF/WAVE file", head=body[:16].hex())
    try:
        with wave.open(io.BytesIO(body)) as audio:
            channels, width = audio.getnchannels(), audio.getsampwidth()
            rate, frames = audio.getframerate(), audio.getnframes()
            samples = audio.readframes(frames)
    except (wave.Error, EOFError) as exc:
        fail(name, f"the WAV file cannot be read: {exc}", head=body[:64].hex())
    if (channels, width) != (1, 2):
        fail(name, "speech must be mono 16-bit PCM", channels=channels, sample_bytes=width)
    if not 8_000 <= rate <= 48_000:
        fail(name, f"the sample rate {rate} Hz is not a speech rate", rate=rate)
    if len(samples) != 2 * frames:
        fail(name, "the data chunk is shorter than the header says", frames=frames,
             data_bytes=len(samples))
    return WavAudio(rate=rate, frames=frames, samples=samples)


@check("speech_audible", severity=Severity.HIGH,
       description="Synthesized speech holds samples, and not all of them are silence")
def check_speech_audible(samples: bytes) -> None:
    if len(samples) < 2:
        fail("speech_audible", "the audio holds no samples", data_bytes=len(samples))
    values = memoryview(samples[: len(samples) // 2 * 2]).cast("h")
    if max(abs(v) for v in values) < AUDIBLE:
        fail("speech_audible", "every sample is silence", samples=len(values))


@check("speech_deterministic", severity=Severity.LOW,
       description="The same speech request twice gives the same audio bytes")
def check_speech_deterministic(first: bytes, again: bytes) -> None:
    if first != again:
        fail("speech_deterministic", "the same request gave different audio",
             sizes=[len(first), len(again)])


@check("speech_depends_on_input", severity=Severity.HIGH,
       description="Different input text gives different audio")
def check_speech_depends_on_input(first: bytes, other: bytes) -> None:
    if first == other:
        fail("speech_depends_on_input", "two different texts gave the same audio",
             size=len(first))


@check("speech_pcm_format", severity=Severity.HIGH,
       description="response_format pcm: headerless 16-bit samples served as audio/pcm; from a "
       "deterministic server, exactly the samples of the wav answer")
def check_speech_pcm(content_type: str, pcm: bytes, wav: WavAudio, deterministic: bool) -> None:
    name = "speech_pcm_format"
    if not content_type.startswith(("audio/pcm", "audio/l16", "application/octet-stream")):
        fail(name, "pcm must be served as audio/pcm", content_type=content_type)
    if pcm[:4] == b"RIFF":
        fail(name, "pcm must be headerless samples, not a WAV file")
    if not pcm or len(pcm) % 2:
        fail(name, "pcm must hold whole 16-bit samples", size=len(pcm))
    if deterministic and pcm != wav.samples:
        fail(name, "pcm must hold the same samples as the wav answer", pcm_bytes=len(pcm),
             wav_data_bytes=len(wav.samples))


@check("speech_sse_events", severity=Severity.HIGH,
       description="stream_format sse: speech.audio.delta events whose base64 audio joins into "
       "the non-streamed answer, then one speech.audio.done with token usage")
def check_speech_sse(stream: SSEStream, audio: bytes, deterministic: bool) -> None:
    name = "speech_sse_events"
    payloads = []
    for event in stream.events:
        try:
            payloads.append(json.loads(event.data))
        except ValueError:
            fail(name, "an event's data is not JSON", data=event.data[:200])
    types = [p.get("type") if isinstance(p, dict) else None for p in payloads]
    if not types or types[-1] != "speech.audio.done" or types.count("speech.audio.done") != 1:
        fail(name, "the stream must end with exactly one speech.audio.done", types=types)
    if set(types[:-1]) - {"speech.audio.delta"} or len(types) < 2:
        fail(name, "speech.audio.delta events must carry the audio before the end", types=types)
    joined = b"".join(_delta_audio(name, p) for p in payloads[:-1])
    _check_usage(name, payloads[-1].get("usage"))
    if deterministic and joined != audio:
        fail(name, "the deltas do not join into the non-streamed audio", streamed=len(joined),
             expected=len(audio))


def _delta_audio(name: str, payload: dict[str, Any]) -> bytes:
    value = payload.get("audio")
    try:
        return base64.b64decode(value if isinstance(value, str) else "", validate=True)
    except (binascii.Error, ValueError):
        fail(name, "a delta's audio is not base64", audio=str(value)[:80])


def _check_usage(name: str, usage: Any) -> None:
    keys = ("input_tokens", "output_tokens", "total_tokens")
    if not isinstance(usage, dict) or not all(isinstance(usage.get(k), int) for k in keys):
        fail(name, "speech.audio.done must carry usage with integer token counts", usage=usage)
    if usage["total_tokens"] != usage["input_tokens"] + usage["output_tokens"]:
        fail(name, "total_tokens must be input_tokens + output_tokens", usage=usage)
