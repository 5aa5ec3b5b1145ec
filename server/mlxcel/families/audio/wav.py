"""Decoding an uploaded WAV file into the 16 kHz mono float32 samples Whisper reads.

Accepted: RIFF/WAVE with integer PCM (8, 16, 24 or 32 bit) or IEEE float (32 or 64 bit)
samples, plain or ``WAVE_FORMAT_EXTENSIBLE``, any sample rate (resampled to 16 kHz) and any
number of channels (averaged to mono). Everything else (MP3, FLAC, Ogg, a truncated or empty
file) is a client error: no ffmpeg is needed or called.
"""

from __future__ import annotations

import io
import struct
import warnings
from math import gcd

import numpy as np

from ...errors import InvalidRequestError

SAMPLE_RATE = 16_000
MIN_RATE, MAX_RATE = 1_000, 384_000
_MAGIC = {b"ID3": "MP3", b"\xff\xfb": "MP3", b"\xff\xf3": "MP3", b"fLaC": "FLAC",
          b"OggS": "Ogg", b"\x1aE\xdf\xa3": "WebM/Matroska"}


def _not_wav(data: bytes) -> str:
    for magic, name in _MAGIC.items():
        if data.startswith(magic):
            return name
    if data[4:8] == b"ftyp":
        return "MP4/M4A"
    return "not a RIFF/WAVE file"


def decode_wav(data: bytes, param: str = "file") -> np.ndarray:
    """The samples of ``data`` as float32 in [-1, 1], mono, at 16 kHz; 400 when not a WAV."""
    from scipy.io import wavfile

    if not data:
        raise InvalidRequestError("The audio file is empty.", param=param, code="invalid_audio")
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise InvalidRequestError(
            f"Unsupported audio format ({_not_wav(data)}): this server decodes WAV files "
            "(PCM 8/16/24/32-bit or float 32/64-bit). Convert the audio to WAV first.",
            param=param, code="unsupported_audio_format")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # scipy warns on chunks it skips (LIST, fact)
            rate, samples = wavfile.read(io.BytesIO(data))
    # scipy's reader fails on malformed headers with whatever the parse hit first; each of
    # these is a property of the uploaded bytes, found by mutating valid files.
    except (ValueError, EOFError, OSError, IndexError, struct.error, ArithmeticError,
            UnboundLocalError) as exc:
        raise InvalidRequestError(f"The WAV file could not be decoded: {exc}", param=param,
                                  code="invalid_audio") from None
    return _normalize(samples, int(rate), param)


def _normalize(samples: np.ndarray, rate: int, param: str) -> np.ndarray:
    if samples.size == 0:
        raise InvalidRequestError("The WAV file holds no audio samples.", param=param,
                                  code="invalid_audio")
    if not MIN_RATE <= rate <= MAX_RATE:
        raise InvalidRequestError(f"The WAV sample rate {rate} Hz is outside {MIN_RATE} to "
                                  f"{MAX_RATE} Hz.", param=param, code="invalid_audio")
    if samples.dtype == np.uint8:
        audio = (samples.astype(np.float32) - 128.0) / 128.0
    elif np.issubdtype(samples.dtype, np.integer):
        audio = samples.astype(np.float32) / float(-np.iinfo(samples.dtype).min)
    else:
        audio = np.nan_to_num(samples.astype(np.float32), nan=0.0, posinf=1.0, neginf=-1.0)
    if audio.ndim == 2:
        audio = audio.mean(axis=1)
    if rate != SAMPLE_RATE:
        from scipy.signal import resample_poly

        step = gcd(rate, SAMPLE_RATE)
        audio = resample_poly(audio, SAMPLE_RATE // step, rate // step).astype(np.float32)
    return np.ascontiguousarray(np.clip(audio, -1.0, 1.0), dtype=np.float32)


def duration_seconds(samples: np.ndarray) -> float:
    return float(samples.shape[0]) / SAMPLE_RATE
