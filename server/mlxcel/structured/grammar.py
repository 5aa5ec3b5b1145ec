"""llguidance grammars for one model: the tokenizer built from ``tokenizer.json`` (once per
model), grammars compiled and checked at request time (so a bad schema is a 400, not a failed
generation), and the logits processor that masks every token which would leave the grammar.

The mask is computed on the CPU with llguidance's numpy bitmask and applied with ``mx.where``
(llguidance's own MLX kernel is Metal-only).
"""

from __future__ import annotations

import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np
from llguidance import LLMatcher, LLTokenizer
from llguidance.numpy import allocate_token_bitmask, fill_next_token_bitmask

from ..errors import InvalidRequestError
from ..generation import LogitsProcessor, LogitsProcessorFactory
from ..generation.model_view import ModelView
from .json_bounds import JSON_STYLE, NumberCaps, bounded_schema

# Keyed by the model's tokenizer object itself (weakly): an id() could be reused by the next
# model loaded after this one is freed.
_TOKENIZERS: weakref.WeakKeyDictionary[Any, LLTokenizer] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


class UnsupportedTokenizer(InvalidRequestError):
    code = "unsupported_tokenizer"


def _tokenizer_json(model: ModelView) -> str:
    local = Path(model.path) / "tokenizer.json"
    if local.is_file():
        return str(local)
    backend = getattr(getattr(model.tokenizer, "_tokenizer", None), "backend_tokenizer", None)
    if backend is None:
        raise UnsupportedTokenizer(
            "UnsupportedTokenizer: constrained decoding needs a HuggingFace BPE tokenizer "
            "(tokenizer.json).",
            param="response_format",
        )
    # A hub model keeps tokenizer.json in the cache; the fast tokenizer can write it back.
    handle = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)  # noqa: SIM115
    with handle:
        handle.write(backend.to_str())
    return handle.name


def ll_tokenizer(model: ModelView) -> LLTokenizer:
    """The model's llguidance tokenizer, built on first use. EOS is passed explicitly:
    llguidance's own guess can pick the wrong token."""
    key = model.tokenizer
    with _LOCK:
        if key not in _TOKENIZERS:
            eos = sorted(model.eos_token_ids) or None
            try:
                _TOKENIZERS[key] = LLTokenizer(_tokenizer_json(model), eos_token=eos)
            except (ValueError, RuntimeError) as exc:
                raise UnsupportedTokenizer(
                    f"UnsupportedTokenizer: {exc}", param="response_format"
                ) from None
        return _TOKENIZERS[key]


@dataclass(frozen=True)
class CompiledGrammar:
    """A checked grammar for one model; ``factory`` makes a fresh matcher per generation."""

    tokenizer: LLTokenizer
    grammar: str

    def factory(self) -> LogitsProcessorFactory:
        def make() -> LogitsProcessor:
            return GrammarLogitsProcessor(LLMatcher(self.tokenizer, self.grammar), self.tokenizer)

        return make


def compile_grammar(model: ModelView, grammar: str, param: str) -> CompiledGrammar:
    tokenizer = ll_tokenizer(model)
    error = LLMatcher.validate_grammar(grammar, tokenizer)
    if error:
        # llguidance's message can quote the schema: keep only its first line, shortened.
        short = error.strip().splitlines()[0][:160] if error.strip() else "invalid grammar"
        raise InvalidRequestError(f"The schema cannot be used for constrained decoding: "
                                  f"{short}", param=param)
    return CompiledGrammar(tokenizer, grammar)


def json_schema_grammar(schema: dict[str, Any], caps: NumberCaps | None = None) -> str:
    """The grammar of ``schema`` with bounded numbers, values and whitespace
    (``json_bounds``)."""
    bounded = bounded_schema(schema, caps)
    return LLMatcher.grammar_from_json_schema(bounded, defaults=JSON_STYLE)  # type: ignore[arg-type]


def lark_grammar(lark: str) -> str:
    return LLMatcher.grammar_from_lark(lark)


class GrammarLogitsProcessor:
    """mlx-lm logits processor: ``tokens`` is every id so far, prompt included; the first call
    sees the prompt alone, each later call one more sampled token."""

    def __init__(self, matcher: LLMatcher, tokenizer: LLTokenizer) -> None:
        self._matcher = matcher
        self._vocab = int(tokenizer.vocab_size)
        self._eos = list(tokenizer.eos_tokens)
        self._bitmask = allocate_token_bitmask(1, self._vocab)
        self._seen: int | None = None

    def _consume(self, tokens: mx.array) -> None:
        total = int(tokens.size)
        if self._seen is None:
            self._seen = total
            return
        new: list[int] = tokens.reshape(-1)[self._seen :].tolist()  # type: ignore[assignment]
        for token in new:
            if not self._matcher.is_error():
                self._matcher.consume_token(int(token))
        self._seen = total

    def __call__(self, tokens: mx.array, logits: mx.array) -> mx.array:
        self._consume(tokens)
        width = logits.shape[-1]
        allowed = np.zeros(width, dtype=bool)
        if self._matcher.is_error():
            # A token the grammar refused got through (another processor?): end the output.
            allowed[[t for t in self._eos if t < width]] = True
        else:
            fill_next_token_bitmask(self._matcher, self._bitmask, 0)
            bits = np.unpackbits(self._bitmask.view(np.uint8), bitorder="little")
            n = min(width, self._vocab)
            allowed[:n] = bits[:n].astype(bool)
        mask = mx.array(allowed).reshape((1,) * (logits.ndim - 1) + (width,))
        return mx.where(mask, logits, mx.array(-float("inf"), dtype=logits.dtype))
