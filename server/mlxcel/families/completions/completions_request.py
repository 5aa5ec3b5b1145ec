"""OpenAI legacy Completions: request model, translation, and rendering (``text_completion``)."""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from ...chat.thinking_budget import raw_prompt_factories
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...errors import InvalidRequestError
from ...generation import Finished, GenerationRequest, TokenDelta, TokenLogprob
from ...protocol.choices import check_choice_count, choice_requests
from ...protocol.completion_fields import finish_reason_of, new_id
from ...protocol.field_limits import Identifier
from ...protocol.sampling_fields import OpenAISamplingFields
from ...protocol.types import Int, Omittable
from ...structured.response_format import (
    check_response_format,
    is_constraining,
    response_format_factories,
)
from ...structured.user_grammar import extra_grammar_factories

PromptField = str | list[str] | list[Int] | list[list[Int]]


class CompletionRequest(OpenAISamplingFields):
    prompt: PromptField
    echo: bool | None = False
    suffix: str | None = None
    logprobs: Int | None = Field(default=None, ge=0, le=20)
    best_of: Int | None = Field(default=None, ge=1)
    user: Omittable[Identifier] = None  # a string in OpenAI's spec, never null
    response_format: Omittable[dict[str, Any]] = None
    timings_per_token: bool | None = None  # llama-server's flag (its README: a boolean)


MAX_PROMPTS = 16


def _one_prompt(prompt: str | list[int], model: LoadedModel) -> list[int]:
    if isinstance(prompt, str):
        return model.encode(prompt) or model.empty_prompt_tokens()
    if not prompt:
        raise InvalidRequestError("a token-id prompt must not be empty.", param="prompt")
    bad = [i for i in prompt if not 0 <= i < model.vocab_size]
    if bad:
        raise InvalidRequestError(
            f"prompt token id {bad[0]} is out of vocabulary range (vocab_size {model.vocab_size}).",
            param="prompt",
        )
    return list(prompt)


def prompt_token_lists(request: CompletionRequest, model: LoadedModel) -> list[list[int]]:
    """Every prompt of the request (a string, token ids, or a list of either) as token ids."""
    prompt = request.prompt
    if isinstance(prompt, str):
        return [_one_prompt(prompt, model)]
    if not prompt:
        raise InvalidRequestError("prompt must not be an empty list.", param="prompt")
    if all(isinstance(p, int) for p in prompt):
        return [_one_prompt([int(p) for p in prompt], model)]  # type: ignore[arg-type]
    if len(prompt) > MAX_PROMPTS:
        raise InvalidRequestError(f"at most {MAX_PROMPTS} prompts per request.", param="prompt")
    return [_one_prompt(p, model) for p in prompt]  # type: ignore[arg-type]


def to_generation_requests(
    request: CompletionRequest, model: LoadedModel, defaults: GenerationDefaults, slots: int = 1
) -> list[GenerationRequest]:
    """``n`` engine requests per prompt (``protocol/choices.py``, at most ``slots``); the
    choice of prompt ``p``'s ``j``-th completion comes back with index ``p * n + j``."""
    n = check_choice_count(request.n, slots)
    check_response_format(request.response_format)
    if request.suffix:
        raise InvalidRequestError("suffix is not supported by this server.", param="suffix")
    if request.best_of is not None and request.best_of > 1:
        raise InvalidRequestError("best_of > 1 is not supported.", param="best_of")
    factories = response_format_factories(model, request.response_format)
    factories += extra_grammar_factories(
        model, request.model_extra,
        "a constraining response_format" if is_constraining(request.response_format) else None)
    budget = request.thinking_budget()
    request_id = new_id("cmpl-")
    per_prompt = [
        GenerationRequest(
            prompt_tokens=tuple(tokens),
            max_tokens=request.max_tokens or defaults.n_predict,
            sampling=request.sampling(defaults),
            stop=request.stop_strings(),
            logprobs=request.logprobs is not None,
            top_logprobs=request.logprobs or 0,
            ignore_eos=bool(request.ignore_eos),
            logits_processor_factories=raw_prompt_factories(model, budget, tokens) + factories,
            request_id=request_id,
        )
        for tokens in prompt_token_lists(request, model)
    ]
    return [choice for gen in per_prompt for choice in choice_requests(gen, n)]


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
        self._offsets: dict[int, int] = {}

    def _chunk(self, index: int, text: str, finish: str | None, logprobs: Any = None) -> dict:
        choice = {"index": index, "text": text, "finish_reason": finish, "logprobs": logprobs}
        return {**self._base, "choices": [choice]}

    def text(self, index: int, text: str) -> dict[str, Any]:
        self._offsets[index] = self._offsets.get(index, 0) + len(text)
        return self._chunk(index, text, None)

    def delta(self, index: int, event: TokenDelta, want_logprobs: bool) -> dict[str, Any]:
        offset = self._offsets.get(index, 0)
        logprobs = legacy_logprobs(list(event.logprobs), offset) if want_logprobs else None
        self._offsets[index] = offset + len(event.text)
        return self._chunk(index, event.text, None, logprobs)

    def finish(self, index: int, finished: Finished) -> dict[str, Any]:
        return self._chunk(index, "", finish_reason_of(finished))

    def usage(self, finished: list[Finished], n: int = 1) -> dict[str, Any]:
        return {**self._base, "choices": [], "usage": total_usage(finished, n)}


def total_usage(finished: list[Finished], n: int = 1) -> dict[str, Any]:
    """Every choice's completion tokens; each prompt (the first of its ``n`` choices) once."""
    prompt = sum(f.prompt_tokens for f in finished[::n])
    completion = sum(f.completion_tokens for f in finished)
    cached = sum(f.cached_tokens for f in finished[::n])
    return {"prompt_tokens": prompt, "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached}}


def completion_body(
    request_id: str,
    model_name: str,
    fingerprint: str,
    choices: list[tuple[str, Finished, dict[str, Any] | None]],
    n: int = 1,
) -> dict[str, Any]:
    return {
        "id": request_id,
        "object": "text_completion",
        "created": int(time.time()),
        "model": model_name,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": i,
                "text": text,
                "finish_reason": finish_reason_of(finished),
                "logprobs": logprobs,
            }
            for i, (text, finished, logprobs) in enumerate(choices)
        ],
        "usage": total_usage([finished for _, finished, _ in choices], n),
    }
