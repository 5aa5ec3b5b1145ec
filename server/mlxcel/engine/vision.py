"""Vision-language models through mlx-vlm: loading a checkpoint that has a vision tower, and the
unbatched run that feeds its pixels through the vision tower into the language model.

A VLM serves every request (with or without images) one sequence at a time on this path:
mlx-vlm's ``generate_step`` (the image's features replace its placeholder tokens' embeddings,
then plain decoding), with the engine's own sampler and logits processors. The model keeps
per-generation rotary state (Qwen2-VL's mRoPE deltas), so two VLM sequences never interleave;
the prompt cache is not used, because image placeholder tokens are the same ids whatever the
image. The loop itself is the engine's: a failure here ends this request only.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx

from ..generation import DraftStats, VisionInputs
from ..media.policy import MediaPolicy
from .loaded_model import LoadedModel, model_display_name
from .solo import SoloResponse


@dataclass
class VisionSupport:
    """What a loaded VLM adds: its processor (image preprocessing and placeholder expansion)
    and the operator's media policy."""

    processor: Any
    policy: MediaPolicy
    model_type: str

    @property
    def image_token(self) -> str | None:
        return self._token("image_token")

    @property
    def video_token(self) -> str | None:
        """The placeholder of a native video path, if the processor and vocabulary have one."""
        return self._token("video_token")

    def _token(self, attribute: str) -> str | None:
        token = getattr(self.processor, attribute, None)
        if not isinstance(token, str):
            return None
        vocab = self.processor.tokenizer.get_vocab()
        return token if token in vocab else None


def is_vision_checkpoint(path_or_repo: str) -> bool:
    """A local checkpoint whose config declares a vision tower."""
    config = Path(path_or_repo) / "config.json"
    if not config.is_file():
        return False
    try:
        data = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and isinstance(data.get("vision_config"), dict)


def load_vision_model(path: str, *, ctx_size: int, policy: MediaPolicy) -> LoadedModel:
    from mlx_lm.tokenizer_utils import load as load_tokenizer
    from mlx_vlm import load

    model, processor = load(path)
    config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    tokenizer = load_tokenizer(Path(path), eos_token_ids=config.get("eos_token_id"))
    text = config.get("text_config") or config
    native = int(text.get("max_position_embeddings") or 4096)
    return LoadedModel(
        name=model_display_name(path),
        path=path,
        model=model,
        tokenizer=tokenizer,
        config=dict(config),
        context_size=ctx_size if ctx_size > 0 else native,
        vision=VisionSupport(processor, policy, str(config.get("model_type", ""))),
    )


class VisionRun:
    """One VLM sequence, a ``SingleSequenceRun`` (engine/single_sequence.py) like
    ``SoloRun``, so the engine steps it the same way."""

    draft_stats: DraftStats | None = None  # it drafts nothing

    def __init__(
        self,
        model: Any,
        prompt: list[int],
        inputs: VisionInputs | None,
        sampler: Any,
        processors: list[Any],
        max_tokens: int,
        prefill_step_size: int,
    ) -> None:
        from mlx_vlm.generate import generate_step
        from mlx_vlm.models.cache import make_prompt_cache

        language = model.language_model
        for stale in ("_position_ids", "_rope_deltas"):  # rotary state of the previous run
            if hasattr(language, stale):
                setattr(language, stale, None)
        self.cache = make_prompt_cache(language)
        self.max_tokens = max_tokens
        self.count = 0
        pixels = None
        extra: dict[str, Any] = {}
        if inputs is not None and inputs.pixel_values is not None:
            pixels = mx.array(inputs.pixel_values)
            extra = {key: mx.array(value) for key, value in inputs.extras.items()}
        self._steps: Iterator[tuple[Any, mx.array]] = generate_step(
            mx.array([prompt]), model, pixels, None, max_tokens=max_tokens, sampler=sampler,
            logits_processors=processors or None, prompt_cache=self.cache,
            prefill_step_size=prefill_step_size, **extra,
        )

    def next(self) -> SoloResponse:
        token, logprobs = next(self._steps)
        self.count += 1
        done = self.count >= self.max_tokens
        return SoloResponse(int(token), logprobs, "length" if done else None, None, None)

    def held_tokens(self) -> list[int]:
        return []  # never donated to the prompt cache

    def close(self) -> None:
        close = getattr(self._steps, "close", None)
        if close is not None:
            close()
