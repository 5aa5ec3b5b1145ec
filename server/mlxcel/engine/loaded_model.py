"""Loading a model through mlx-lm (local path or hub id) or from a GGUF file (engine/gguf/), and
what the server needs to know of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import mlx.nn as nn
import tokenizers
from mlx_lm.tokenizer_utils import TokenizerWrapper

from ..limits import check_tokenize_length
from .gguf import UnsupportedGGUF, is_gguf_path, load_gguf

if TYPE_CHECKING:
    from .vision import VisionSupport


@dataclass
class LoadedModel:
    """A model, its tokenizer, and the facts the API reports about them."""

    name: str
    path: str
    model: nn.Module
    tokenizer: TokenizerWrapper
    config: dict[str, Any]
    context_size: int
    # Set for a vision-language model loaded through mlx-vlm (engine/vision.py).
    vision: VisionSupport | None = None

    @property
    def eos_token_ids(self) -> set[int]:
        return set(self.tokenizer.eos_token_ids or ())

    @cached_property
    def vocab_size(self) -> int:
        # get_vocab() builds a dict of the whole vocabulary (tens of ms for 150k tokens), and
        # every generation request asks.
        return len(self.tokenizer.get_vocab())

    @property
    def chat_template(self) -> str | None:
        template = getattr(self.tokenizer, "chat_template", None)
        return template if isinstance(template, str) else None

    @property
    def supports_tools(self) -> bool:
        template = self.chat_template or ""
        return "tools" in template

    def encode(self, text: str, *, add_special: bool = False) -> list[int]:
        check_tokenize_length(text)
        ids: list[int] = self.tokenizer.encode(text, add_special_tokens=add_special)
        return ids

    def empty_prompt_tokens(self) -> list[int]:
        """What an empty prompt starts from: BOS, else the end-of-text token (as OpenAI does)."""
        tok = self.tokenizer
        for candidate in (tok.bos_token_id, getattr(tok, "pad_token_id", None), tok.eos_token_id):
            if isinstance(candidate, int):
                return [candidate]
        return [0]

    def decode(self, token_ids: list[int]) -> str:
        return self._decode(token_ids)

    @cached_property
    def _decode(self) -> Callable[[list[int]], str]:
        """The tokenizer's decode; straight to its Rust backend when transformers' wrapper
        would return the backend's text unchanged (no clean-up of spaces), which saves ~15 us
        of Python per call: streaming decodes twice per generated token."""
        wrapped = getattr(self.tokenizer, "_tokenizer", None)
        backend = getattr(wrapped, "_tokenizer", None)
        if (isinstance(backend, tokenizers.Tokenizer)
                and getattr(wrapped, "clean_up_tokenization_spaces", True) is False):
            return partial(backend.decode, skip_special_tokens=False)
        return cast(Callable[[list[int]], str], self.tokenizer.decode)


def model_display_name(path_or_repo: str) -> str:
    path = Path(path_or_repo)
    return path.name if path.exists() else path_or_repo


def load_model(path_or_repo: str, *, ctx_size: int = 0) -> LoadedModel:
    """Load with ``mlx_lm.load``; ``ctx_size`` 0 means the model's own maximum."""
    from mlx_lm import load

    from .distributed import load_sharded, sharding_group

    group = sharding_group()  # under mlx.launch: this rank's shard (see engine/distributed.py)
    if is_gguf_path(path_or_repo):  # llama.cpp's format, read by engine/gguf/
        if group is not None:
            raise UnsupportedGGUF(path_or_repo, "sharded serving takes an mlx-lm directory "
                                  "(mlxcel-convert writes one from this file)")
        model, tokenizer, config = load_gguf(path_or_repo)
    elif group is not None:
        model, tokenizer, config = load_sharded(path_or_repo, group)
    else:
        model, tokenizer, config = load(path_or_repo, return_config=True)  # type: ignore[misc]
    native = int(config.get("max_position_embeddings") or 4096)
    context = ctx_size if ctx_size > 0 else native
    return LoadedModel(
        name=model_display_name(path_or_repo),
        path=path_or_repo,
        model=model,
        tokenizer=tokenizer,
        config=dict(config),
        context_size=context,
    )


def load_draft_model(path: str, target: LoadedModel) -> LoadedModel:
    """A speculative-decoding draft model; it must share the target's vocabulary (same ids
    for the same tokens), or its drafts would be meaningless."""
    from mlx_lm import load

    model, tokenizer, config = load(path, return_config=True)  # type: ignore[misc]
    if tokenizer.get_vocab() != target.tokenizer.get_vocab():
        raise ValueError(f"draft model {path} does not share the model's vocabulary")
    return LoadedModel(model_display_name(path), path, model, tokenizer, dict(config),
                       target.context_size)
