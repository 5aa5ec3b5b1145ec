"""Synthesized speech in each ``response_format`` of OpenAI's speech API.

``wav`` (16-bit PCM, mono, RIFF) and ``pcm`` (the same samples, headerless, little-endian) need
nothing beyond the standard library; ``flac``, ``mp3`` and ``opus`` (in Ogg) are encoded by
libsndfile through ``soundfile`` (the ``audio`` extra), and are offered only where it is
installed. ``aac`` has no encoder here.
"""

from __future__ import annotations

import importlib.util
import io
import wave
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class AudioFormat:
    media_type: str
    encode: Callable[[np.ndarray, int], bytes]  # float32 samples in [-1, 1], sample rate
    needs_soundfile: bool = False


def pcm16(samples: np.ndarray) -> bytes:
    scaled = np.round(np.clip(samples, -1.0, 1.0) * 32767.0)
    return scaled.astype("<i2").tobytes()


def _wav(samples: np.ndarray, rate: int) -> bytes:
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(pcm16(samples))
    return buffer.getvalue()


def _libsndfile(container: str, subtype: str) -> Callable[[np.ndarray, int], bytes]:
    def encode(samples: np.ndarray, rate: int) -> bytes:
        import soundfile

        buffer = io.BytesIO()
        soundfile.write(buffer, np.clip(samples, -1.0, 1.0), rate, format=container,
                        subtype=subtype)
        return buffer.getvalue()
    return encode


FORMATS = {
    "mp3": AudioFormat("audio/mpeg", _libsndfile("MP3", "MPEG_LAYER_III"), True),
    "opus": AudioFormat("audio/opus", _libsndfile("OGG", "OPUS"), True),
    "flac": AudioFormat("audio/flac", _libsndfile("FLAC", "PCM_16"), True),
    "wav": AudioFormat("audio/wav", _wav),
    "pcm": AudioFormat("audio/pcm", lambda samples, rate: pcm16(samples)),
}
# OpenAI's formats that no encoder here writes.
UNSUPPORTED = ("aac",)


def supported_formats() -> tuple[str, ...]:
    has_soundfile = importlib.util.find_spec("soundfile") is not None
    return tuple(name for name, fmt in FORMATS.items() if has_soundfile or not fmt.needs_soundfile)
