"""WAV decoding: the formats the audio routes accept, and 400s for everything else."""

from __future__ import annotations

import io

import numpy as np
import pytest
from scipy.io import wavfile

from mlxcel.errors import InvalidRequestError
from mlxcel.families.audio.wav import SAMPLE_RATE, decode_wav

from .audio_samples import tone, wav_bytes


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_integer_pcm_widths_decode_to_the_same_signal(width: int) -> None:
    signal = tone(0.25)
    decoded = decode_wav(wav_bytes(signal, width=width))
    assert decoded.dtype == np.float32 and decoded.shape == signal.shape
    assert np.max(np.abs(decoded - signal)) < (0.02 if width == 1 else 1e-3)


def test_float_wav_and_stereo_are_mixed_to_mono() -> None:
    signal = tone(0.25)
    buffer = io.BytesIO()
    wavfile.write(buffer, SAMPLE_RATE, np.stack([signal, signal * 0.5], axis=1))
    decoded = decode_wav(buffer.getvalue())
    assert np.allclose(decoded, signal * 0.75, atol=1e-6)


def test_other_rates_are_resampled_to_16k() -> None:
    decoded = decode_wav(wav_bytes(tone(0.5, rate=44_100), rate=44_100))
    assert decoded.shape == (8000,)
    spectrum = np.abs(np.fft.rfft(decoded))
    assert abs(int(np.argmax(spectrum)) * SAMPLE_RATE / decoded.size - 440) < 5


@pytest.mark.parametrize(("data", "code", "words"), [
    (b"", "invalid_audio", "empty"),
    (b"ID3\x03\x00rest-of-an-mp3", "unsupported_audio_format", "MP3"),
    (b"OggS\x00\x02", "unsupported_audio_format", "Ogg"),
    (b"plain text, not audio", "unsupported_audio_format", "RIFF"),
    (b"RIFF\x24\x00\x00\x00WAVEfmt \x10\x00", "invalid_audio", "decoded"),
    (wav_bytes(np.zeros(0, np.float32)), "invalid_audio", "no audio samples"),
    (wav_bytes(tone(0.01), rate=500), "invalid_audio", "sample rate 500 Hz"),
])
def test_bad_audio_is_a_400_naming_the_problem(data: bytes, code: str, words: str) -> None:
    with pytest.raises(InvalidRequestError) as exc:
        decode_wav(data)
    assert exc.value.status == 400 and exc.value.code == code and exc.value.param == "file"
    assert words in exc.value.message
