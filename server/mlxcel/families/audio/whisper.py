"""A Whisper checkpoint loaded with mlx-whisper, and one transcription or translation run.

A checkpoint is an mlx-whisper directory (``config.json`` with Whisper's ``ModelDimensions``
and ``weights.safetensors`` or ``weights.npz``), local or a hub id; the tokenizer is the
tiktoken file mlx-whisper bundles. mlx-whisper is the optional ``audio`` extra, imported only
when an audio model is configured.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import mlx.core as mx
import numpy as np

Task = Literal["transcribe", "translate"]
# Whisper's own fallback schedule: OpenAI documents temperature 0 as "raise the temperature
# until the log-probability and compression thresholds are met".
FALLBACK_TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
# Every request samples from the same PRNG state, so one input gives one transcript.
SAMPLING_SEED = 0


# mlx-whisper declares torch, which only its checkpoint converter imports and which resolves to
# a multi-GB CUDA build on Linux: it goes in without its dependencies, which the extra lists.
WHISPER_INSTALL = "pip install 'mlxcel[audio]' && pip install --no-deps mlx-whisper==0.4.3"


def whisper_missing() -> str | None:
    """The install command when mlx-whisper is not installed, else None."""
    return None if importlib.util.find_spec("mlx_whisper") else WHISPER_INSTALL


class AudioBackendMissing(RuntimeError):
    """mlx-whisper is not installed (the ``audio`` extra)."""


def is_whisper_checkpoint(path: Path) -> bool:
    config = path / "config.json"
    if not config.is_file():
        return False
    keys = json.loads(config.read_text())
    return keys.get("model_type") == "whisper" or {"n_mels", "n_audio_ctx"} <= set(keys)


@dataclass
class WhisperModel:
    kind: ClassVar[str] = "whisper"
    name: str
    path: str
    model: Any  # mlx_whisper.whisper.Whisper

    @property
    def multilingual(self) -> bool:
        return bool(self.model.is_multilingual)

    def run(self, samples: np.ndarray, *, task: Task, language: str | None, prompt: str | None,
            temperature: float, word_timestamps: bool) -> dict[str, Any]:
        """mlx-whisper's ``transcribe`` on 16 kHz mono samples; call on the audio worker."""
        from mlx_whisper.transcribe import ModelHolder, transcribe

        # transcribe() loads through this holder; it is ours, set at startup.
        ModelHolder.model, ModelHolder.model_path = self.model, self.path
        mx.random.seed(SAMPLING_SEED)
        temperatures = FALLBACK_TEMPERATURES if temperature == 0 else (temperature,)
        result: dict[str, Any] = transcribe(
            samples, path_or_hf_repo=self.path, verbose=None, temperature=temperatures,
            task=task, language=language, initial_prompt=prompt,
            word_timestamps=word_timestamps, fp16=_fp16(),
        )
        return result


def _sample_from_the_seeded_state() -> None:
    """mlx-whisper samples with an ``mx.compile``d function, which captures the random key of
    its first trace: every later draw at that temperature repeats it, and which key was captured
    depends on what the process served first (a server whose first request decoded at 0.2 gave
    another transcript at temperature 0 than one that started at 0). An uncompiled draw reads
    the key ``run`` seeds per request, so one input gives one transcript in any process."""
    from mlx_whisper import decoding

    decoding.categorical = _categorical


def _categorical(logits: mx.array, temperature: float) -> mx.array:
    return mx.random.categorical(logits / temperature)


def _fp16() -> bool:
    """Half precision where it is fast (Metal); the CPU computes in float32."""
    return bool(mx.metal.is_available())


def load_whisper(path_or_repo: str, name: str | None = None) -> WhisperModel:
    try:
        from mlx_whisper.load_models import load_model
    except ImportError as exc:
        raise AudioBackendMissing(
            f"--audio-model needs mlx-whisper: {WHISPER_INSTALL} ({exc})") from None
    local = Path(path_or_repo)
    if local.exists() and not is_whisper_checkpoint(local):
        raise ValueError(f"{path_or_repo} is not a Whisper checkpoint (mlx-whisper's "
                         "config.json and weights.safetensors)")
    _sample_from_the_seeded_state()
    model = load_model(path_or_repo, dtype=mx.float16 if _fp16() else mx.float32)
    name = name or (local.name if local.exists() else path_or_repo)
    return WhisperModel(name=name, path=path_or_repo, model=model)
