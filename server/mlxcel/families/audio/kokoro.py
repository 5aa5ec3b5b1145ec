"""A Kokoro checkpoint loaded with mlx-audio, and one speech synthesis run.

A checkpoint is a local directory: ``config.json`` (``model_type: kokoro`` with its phoneme
vocabulary), the weights (``*.safetensors``) and ``voices/<voice>.safetensors``, each a
``(510, 1, 256)`` style pack indexed by phoneme count. The text goes through ``g2p`` and each
phoneme chunk through the network directly (not mlx-audio's ``KokoroPipeline``, which downloads
voices and misaki's spaCy model on demand).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import mlx.core as mx
import numpy as np

from ...errors import InvalidRequestError
from .g2p import MAX_CHUNK, Phonemizer, missing_packages

# Kokoro's vocoder draws noise; every request starts from the same PRNG state, so one input
# gives one waveform.
SYNTHESIS_SEED = 0


def is_kokoro_checkpoint(path: Path) -> bool:
    config = path / "config.json"
    return config.is_file() and json.loads(config.read_text()).get("model_type") == "kokoro"


@dataclass(frozen=True)
class Speech:
    """Mono float32 samples in [-1, 1] and what the synthesis consumed and produced."""

    samples: np.ndarray
    sample_rate: int
    phonemes: int  # phoneme symbols read (the input tokens)
    frames: int  # duration frames predicted (the output tokens)


@dataclass
class KokoroModel:
    kind: ClassVar[str] = "kokoro"
    name: str
    path: Path
    model: Any  # mlx_audio.tts.models.kokoro.Model
    voices: dict[str, mx.array]  # name -> style pack, (rows, 1, 2 * style_dim)
    phonemize: Phonemizer = field(default_factory=Phonemizer)

    @property
    def sample_rate(self) -> int:
        return int(self.model.sample_rate)

    def synthesize(self, text: str, voice: str, speed: float) -> Speech:
        """Speak ``text`` in ``voice``: G2P, then one forward pass per phoneme chunk, the
        waveforms joined. Call on the audio worker."""
        chunks = self.phonemize(text, voice)
        if not chunks:
            raise InvalidRequestError("The input has nothing to speak: its text gives no "
                                      "phonemes.", param="input")
        pack = self.voices[voice]
        mx.random.seed(SYNTHESIS_SEED)
        waves, frames = [], 0
        for phonemes in chunks:
            out = self.model(phonemes, pack[min(len(phonemes), len(pack)) - 1], speed,
                             return_output=True)
            waves.append(np.array(out.audio, dtype=np.float32).reshape(-1))
            frames += int(out.pred_dur.sum().item())
        samples = np.concatenate(waves)
        return Speech(_full_scale(samples), self.sample_rate, sum(len(c) for c in chunks),
                      frames)


def _full_scale(samples: np.ndarray) -> np.ndarray:
    """Non-finite samples zeroed and, only where the peak is past full scale, the waveform
    scaled down to it (a trained Kokoro stays within [-1, 1]; untrained weights do not, and
    clipping would square the wave off)."""
    audio = np.nan_to_num(samples, nan=0.0, posinf=0.0, neginf=0.0)
    peak = float(np.abs(audio).max()) if audio.size else 0.0
    return (audio / peak if peak > 1.0 else audio).astype(np.float32)


def _voice_files(path: Path) -> dict[str, Path]:
    folder = path / "voices"
    found = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    return {file.stem: file for file in found}


def _load_pack(file: Path, width: int) -> mx.array:
    try:
        tensors = mx.load(str(file))
    except (OSError, RuntimeError, ValueError) as exc:
        raise ValueError(f"the voice {file} could not be read: {exc}") from None
    pack = tensors.get("voice") if isinstance(tensors, dict) else None
    if pack is None or pack.ndim != 3 or pack.shape[0] < 1 or tuple(pack.shape[1:]) != (1, width):
        raise ValueError(f"the voice {file} holds no 'voice' tensor of shape (rows, 1, {width})")
    return pack


def kokoro_problem(path: Path) -> str | None:
    """Why ``path`` cannot be served as a Kokoro checkpoint, or None."""
    missing = missing_packages()
    if missing:
        return f"Kokoro speech needs {', '.join(missing)}: pip install 'mlxcel[audio]'"
    if not _voice_files(path):
        return (f"the Kokoro checkpoint {path} has no voices: Kokoro needs "
                "voices/<voice>.safetensors files (for example voices/af_heart.safetensors)")
    if not any(path.glob("*.safetensors")):
        return f"the Kokoro checkpoint {path} has no weights (*.safetensors)"
    return None


def load_kokoro(path: Path, name: str | None = None) -> KokoroModel:
    from mlx_audio.tts.utils import load_model

    problem = kokoro_problem(path)
    if problem:
        raise ValueError(problem)
    model = load_model(path)
    if int(model.context_length) - 2 < MAX_CHUNK:
        raise ValueError(f"the Kokoro checkpoint {path} reads {model.context_length} "
                         f"positions; {MAX_CHUNK + 2} are needed")
    width = 2 * int(model.config.style_dim)  # the style halves: decoder, then prosody
    voices = {voice: _load_pack(file, width) for voice, file in _voice_files(path).items()}
    return KokoroModel(name=name or path.name, path=path, model=model, voices=voices)
