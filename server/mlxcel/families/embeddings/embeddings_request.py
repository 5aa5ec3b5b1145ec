"""Embedding requests and responses: OpenAI's ``/v1/embeddings`` and llama-server's native
``/embedding`` / ``/embeddings`` (a bare array of ``{index, embedding: [[...]]}``)."""

from __future__ import annotations

import base64
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...errors import ContextLengthExceeded, InvalidRequestError
from ...protocol.field_limits import Identifier
from ...protocol.types import Int, Omittable
from .encoder_model import EncoderModel
from .pooling import Pooling, normalize, pool

EmbeddingInput = str | list[str] | list[Int] | list[list[Int]]
MAX_INPUTS = 256


class EmbeddingsRequest(BaseModel):
    """``POST /v1/embeddings`` (OpenAI)."""

    model_config = ConfigDict(strict=True, extra="allow")
    input: EmbeddingInput
    # OpenAI's CreateEmbeddingRequest types these without null.
    model: Omittable[str] = None
    encoding_format: Omittable[Literal["float", "base64"]] = None
    dimensions: Int | None = Field(default=None, ge=1)
    user: Omittable[Identifier] = None


class NativeEmbeddingRequest(BaseModel):
    """``POST /embedding`` and ``/embeddings`` (llama-server): ``content`` or ``input``."""

    model_config = ConfigDict(strict=True, extra="allow")
    content: Omittable[EmbeddingInput] = None
    input: Omittable[EmbeddingInput] = None
    embd_normalize: Omittable[Int] = Field(default=None, ge=-1)

    @field_validator("content", "input")
    @classmethod
    def _not_empty(cls, value: EmbeddingInput | None) -> EmbeddingInput | None:
        # checked for both fields, the one ``content`` shadows included
        if value is not None and not value:
            raise ValueError("must not be empty")
        return value

    def inputs(self) -> EmbeddingInput:
        value = self.content if self.content is not None else self.input
        if value is None:
            raise InvalidRequestError("Missing required parameter: 'content'.", param="content")
        return value


def input_token_lists(model: EncoderModel, value: EmbeddingInput, param: str) -> list[list[int]]:
    """Every input as token ids (text gets the model's special tokens; ids are used as is)."""
    if isinstance(value, str):
        items: list[Any] = [value]
    elif value and all(isinstance(v, int) for v in value):
        items = [list(value)]
    else:
        items = list(value)
    if not items:
        raise InvalidRequestError(f"'{param}' must not be an empty list.", param=param)
    if len(items) > MAX_INPUTS:
        raise InvalidRequestError(f"at most {MAX_INPUTS} inputs per request.", param=param)
    out = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            if not item:
                raise InvalidRequestError(f"input {index} is an empty string.", param=param)
            ids = model.encode(item)
        else:
            if not item:
                raise InvalidRequestError(f"input {index} is an empty token list.", param=param)
            bad = [t for t in item if not 0 <= t < model.vocab_size]
            if bad:
                raise InvalidRequestError(
                    f"input {index} has token id {bad[0]} outside the vocabulary "
                    f"(vocab_size {model.vocab_size}).", param=param)
            ids = list(item)
        if len(ids) > model.max_tokens:
            raise ContextLengthExceeded(
                f"input {index} has {len(ids)} tokens, more than the embedding model's "
                f"maximum of {model.max_tokens}.", param=param, n_prompt_tokens=len(ids),
                n_ctx=model.max_tokens)
        out.append(ids)
    return out


def embed(model: EncoderModel, inputs: list[list[int]], pooling: Pooling,
          norm: int) -> list[np.ndarray]:
    """Run on the encoder thread: one forward pass per input (so an input's vector never
    depends on what else was in the request), pooled then normalized."""
    out = []
    for ids in inputs:
        vector = pool(model.token_states(ids), pooling)
        out.append(vector if pooling == "none" else normalize(vector, norm))
    return out


def _encode_vector(vector: np.ndarray, fmt: str | None) -> Any:
    if fmt == "base64":
        return base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii")
    return [float(x) for x in vector]


def openai_embeddings_body(model_name: str, vectors: list[np.ndarray], n_tokens: int,
                           fmt: str | None) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": _encode_vector(v, fmt)}
                 for i, v in enumerate(vectors)],
        "model": model_name,
        "usage": {"prompt_tokens": n_tokens, "total_tokens": n_tokens},
    }


def native_embeddings_body(vectors: list[np.ndarray]) -> list[dict[str, Any]]:
    """One entry per input; ``embedding`` is a list of vectors (one when pooled, one per
    token with pooling ``none``)."""
    return [
        {"index": i, "embedding": [[float(x) for x in row] for row in np.atleast_2d(v)]}
        for i, v in enumerate(vectors)
    ]
