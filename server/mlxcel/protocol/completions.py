"""OpenAI legacy Completions: request model, translation, and rendering (``text_completion``)."""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from ..config import GenerationDefaults
from ..engine.model import LoadedModel
from ..engine.request import Finished, GenerationRequest, TokenDelta, TokenLogprob
from ..errors import InvalidRequestError
from .chat import finish_reason_of, new_id, usage_of
from .sampling_fields import OpenAISamplingFields

PromptField = str | list[str] | list[int] | list[list[int]]


class CompletionRequest(OpenAISamplingFields):
    prompt: PromptField
    echo: bool | None = False
    suffix: str | None = None
    logprobs: int | None = Field(default=None, ge=0, le=20)
    best_of: int | None = Field(default=None, ge=1)
    response_format: dict[str, Any] | None = None


def prompt_tokens(request: CompletionRequest, model: LoadedModel) -> list[int]:
    prompt = request.prompt
    if isinstance(prompt, str):
        return model.encode(prompt)
    if not prompt:
        raise InvalidRequestError("prompt must not be an empty list.", param="prompt")
    if all(isinstance(p, int) for p in prompt):
        ids = [int(p) for p in prompt]  # type: ignore[arg-type]
    elif len(prompt) == 1:
        only = prompt[0]
        ids = model.encode(only) if isinstance(only, str) else list(only)  # type: ignore[arg-type]
    else:
        raise InvalidRequestError(
            "Only one prompt per request is supported by this server.", param="prompt"
        )
    bad = [i for i in ids if not 0 <= i < model.vocab_size]
    if bad:
        raise InvalidRequestError(
            f"prompt token id {bad[0]} is out of vocabulary range (vocab_size {model.vocab_size}).",
            param="prompt",
        )
    return ids


def to_generation_request(
    request: CompletionRequest, model: LoadedModel, defaults: GenerationDefaults
) -> GenerationRequest:
    request.check_n()
    if request.suffix:
        raise InvalidRequestError("suffix is not supported by this server.", param="suffix")
    if request.best_of is not None and request.best_of > 1:
        raise InvalidRequestError("best_of > 1 is not supported.", param="best_of")
    fmt = (request.response_format or {}).get("type", "text")
    if fmt != "text":
        raise InvalidRequestError(
            f"response_format type {fmt!r} is not supported yet.", param="response_format"
        )
    return GenerationRequest(
        prompt_tokens=tuple(prompt_tokens(request, model)),
        max_tokens=request.max_tokens or defaults.n_predict,
        sampling=request.sampling(defaults),
        stop=request.stop_strings(),
        logprobs=request.logprobs is not None,
        top_logprobs=request.logprobs or 0,
        ignore_eos=bool(request.ignore_eos),
        request_id=new_id("cmpl-"),
    )


def legacy_logprobs(items: list[TokenLogprob], offset: int) -> dict[str, Any]:
    """The legacy ``logprobs`` object: parallel arrays plus text offsets."""
    offsets: list[int] = []
    for lp in items:
        offsets.append(offset)
        offset += len(lp.token)
    return {
        "tokens": [lp.token for lp in items],
        "token_logprobs": [lp.logprob for lp in items],
        "top_logprobs": [{t.token: t.logprob for t in lp.top} for lp in items],
        "text_offset": offsets,
    }


class CompletionChunkEncoder:
    def __init__(self, request_id: str, model_name: str, fingerprint: str) -> None:
        self._base = {
            "id": request_id,
            "object": "text_completion",
            "created": int(time.time()),
            "model": model_name,
            "system_fingerprint": fingerprint,
        }
        self._offset = 0

    def _chunk(self, text: str, finish: str | None, logprobs: Any = None) -> dict[str, Any]:
        choice = {"index": 0, "text": text, "finish_reason": finish, "logprobs": logprobs}
        return {**self._base, "choices": [choice]}

    def text(self, text: str) -> dict[str, Any]:
        self._offset += len(text)
        return self._chunk(text, None)

    def delta(self, event: TokenDelta, want_logprobs: bool) -> dict[str, Any]:
        logprobs = legacy_logprobs(list(event.logprobs), self._offset) if want_logprobs else None
        self._offset += len(event.text)
        return self._chunk(event.text, None, logprobs)

    def finish(self, finished: Finished) -> dict[str, Any]:
        return self._chunk("", finish_reason_of(finished))

    def usage(self, finished: Finished) -> dict[str, Any]:
        return {**self._base, "choices": [], "usage": usage_of(finished)}


def completion_body(
    request_id: str,
    model_name: str,
    fingerprint: str,
    text: str,
    finished: Finished,
    logprobs: dict[str, Any] | None,
) -> dict[str, Any]:
    return {
        "id": request_id,
        "object": "text_completion",
        "created": int(time.time()),
        "model": model_name,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": 0,
                "text": text,
                "finish_reason": finish_reason_of(finished),
                "logprobs": logprobs,
            }
        ],
        "usage": usage_of(finished),
    }
