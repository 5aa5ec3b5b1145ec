"""The tokenizer a GGUF file describes (``tokenizer.ggml.*``), as the ``tokenizer.json`` and
``tokenizer_config.json`` an mlx-lm directory holds, then mlx-lm's ``TokenizerWrapper``.

transformers converts GGUF vocabularies already (``transformers.integrations.gguf.
gguf_tokenizer_mapping.convert_gguf_tokenizer``); its ``get_gguf_tokenizer(path)`` imports torch,
so the tokenizer dict is filled here from the metadata MLX read, through the same key table
(``GGUF_TOKENIZER_MAPPING``). BOS/EOS are added as llama.cpp adds them: by
``tokenizer.ggml.add_bos_token``/``add_eos_token`` (llama.cpp's default is on for a sentencepiece
vocabulary, ``tokenizer.ggml.model`` "llama", as transformers assumes too).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from mlx_lm.tokenizer_utils import TokenizerWrapper
from mlx_lm.tokenizer_utils import load as load_tokenizer_dir
from tokenizers import Tokenizer, processors

from .unsupported import UnsupportedGGUF


def _special(metadata: dict[str, Any], key: str) -> str | None:
    index = metadata.get(f"tokenizer.ggml.{key}")
    tokens = metadata["tokenizer.ggml.tokens"]
    return tokens[index] if isinstance(index, int) and 0 <= index < len(tokens) else None


def _post_processor(bos: str | None, eos: str | None, add_bos: bool, add_eos: bool,
                    ids: dict[str, int]) -> processors.TemplateProcessing:
    """What ``add_special_tokens=True`` adds around a text (and nothing when neither flag is on)."""
    before = [bos] if add_bos and bos else []
    after = [eos] if add_eos and eos else []
    single = " ".join([*before, "$A", *after])
    pair = " ".join([*before, "$A", *after, *before, "$B:1", *after])
    specials = [(token, ids[token]) for token in {*before, *after}]
    return processors.TemplateProcessing(single=single, pair=pair, special_tokens=specials)


def tokenizer_backend(path: str, metadata: dict[str, Any]) -> Tokenizer:
    from transformers.integrations.gguf.gguf_tokenizer_mapping import (
        GGUF_TOKENIZER_MAPPING,
        convert_gguf_tokenizer,
    )

    if not isinstance(metadata.get("tokenizer.ggml.tokens"), list):
        raise UnsupportedGGUF(path, "no tokenizer.ggml.tokens in the metadata")
    fields = {name: metadata[f"tokenizer.{key}"]
              for key, name in GGUF_TOKENIZER_MAPPING["tokenizer"].items()
              if f"tokenizer.{key}" in metadata}
    try:
        backend, _ = convert_gguf_tokenizer(metadata["general.architecture"], fields)
    except ValueError as exc:  # transformers names the tokenizer model it does not know
        raise UnsupportedGGUF(path, f"tokenizer: {exc}") from None
    return backend


def tokenizer_files(path: str, metadata: dict[str, Any],
                    context_length: int) -> tuple[str, dict[str, Any]]:
    """``tokenizer.json`` (text) and ``tokenizer_config.json`` (dict) for this file."""
    backend = tokenizer_backend(path, metadata)
    bos, eos = _special(metadata, "bos_token_id"), _special(metadata, "eos_token_id")
    sentencepiece = metadata.get("tokenizer.ggml.model") == "llama"
    add_bos = bool(metadata.get("tokenizer.ggml.add_bos_token", sentencepiece))
    add_eos = bool(metadata.get("tokenizer.ggml.add_eos_token", False))
    backend.post_processor = _post_processor(bos, eos, add_bos, add_eos, backend.get_vocab())
    config: dict[str, Any] = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": bos,
        "eos_token": eos,
        "unk_token": _special(metadata, "unknown_token_id"),
        "pad_token": _special(metadata, "padding_token_id"),
        "add_bos_token": add_bos,
        "add_eos_token": add_eos,
        "clean_up_tokenization_spaces": False,
        "model_max_length": context_length,
    }
    if isinstance(metadata.get("tokenizer.chat_template"), str):
        config["chat_template"] = metadata["tokenizer.chat_template"]
    return backend.to_str(), {key: value for key, value in config.items() if value is not None}


def save_tokenizer(path: str, metadata: dict[str, Any], context_length: int,
                   directory: Path) -> None:
    text, config = tokenizer_files(path, metadata, context_length)
    (directory / "tokenizer.json").write_text(text, encoding="utf-8")
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2,
                                                                ensure_ascii=False),
                                                     encoding="utf-8")


def load_gguf_tokenizer(path: str, metadata: dict[str, Any], config: dict[str, Any]
                        ) -> TokenizerWrapper:
    """mlx-lm's wrapper over the files ``save_tokenizer`` writes: the same tokenizer, streaming
    detokenizer and tool-parser choice an mlx-lm directory converted from this file gets."""
    with tempfile.TemporaryDirectory(prefix="mlxcel-gguf-tokenizer-") as directory:
        save_tokenizer(path, metadata, int(config["max_position_embeddings"]), Path(directory))
        return load_tokenizer_dir(Path(directory), eos_token_ids=config.get("eos_token_id"))
