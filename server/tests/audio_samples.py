"""WAV files for the audio tests, made in memory (the suite's ``wav_file``), and the error
body check the audio route tests share."""

from __future__ import annotations

from typing import Any

import httpx
import numpy as np

from mlxcel_conformance.checks.audio import wav_file

RATE = 16_000


def wav_bytes(samples: np.ndarray, rate: int = RATE, width: int = 2, channels: int = 1) -> bytes:
    """``samples`` in [-1, 1], shape (n,) or (n, channels), as integer PCM of ``width`` bytes."""
    data = samples.reshape(-1, channels) if samples.ndim == 1 else samples
    if width == 1:
        raw = np.round(data * 127 + 128).astype(np.uint8).tobytes()
    elif width == 2:
        raw = np.round(data * 32767).astype("<i2").tobytes()
    elif width == 3:
        ints = np.round(data * (2**23 - 1)).astype("<i4").reshape(-1)
        raw = b"".join(int(v).to_bytes(3, "little", signed=True) for v in ints)
    else:
        raw = np.round(data * (2**31 - 1)).astype("<i4").tobytes()
    return wav_file(raw, rate, channels=channels, width=width)


def tone(seconds: float = 1.0, hz: float = 440.0, rate: int = RATE) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)


def noise(seconds: float = 1.0, seed: int = 0, rate: int = RATE) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.clip(0.2 * rng.standard_normal(int(seconds * rate)), -1, 1).astype(np.float32)


def error_of(response: httpx.Response, status: int) -> dict[str, Any]:
    """The OpenAI-shaped ``error`` of a response that must have ``status``."""
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error
