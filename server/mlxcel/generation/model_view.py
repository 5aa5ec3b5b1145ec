"""What the layers above the engine may know about a loaded model: its tokenizer, template,
context and vision support, as a structural type. ``engine.loaded_model.LoadedModel`` satisfies it;
``chat/`` and ``structured/`` are written against this, not against the engine."""

from __future__ import annotations

from typing import Any, Protocol


class ModelView(Protocol):
    path: str
    tokenizer: Any
    context_size: int
    vision: Any  # engine.vision.VisionSupport for a vision-language model, else None

    @property
    def eos_token_ids(self) -> set[int]: ...

    @property
    def chat_template(self) -> str | None: ...

    def encode(self, text: str, *, add_special: bool = False) -> list[int]: ...

    def decode(self, token_ids: list[int]) -> str: ...
