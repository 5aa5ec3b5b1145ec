"""llama-server's native ``POST /completion``: request model, translation, and rendering.

The wire format follows llama-server: a JSON object (an array when several prompts are sent)
with ``content``, ``stop``, ``tokens_predicted``, ``tokens_evaluated``, ``stop_type`` and
``timings``; a stream of bare ``data:`` partial objects (``stop: false``) closed by one final
object (``stop: true``) and no ``[DONE]``. ``NativeRun`` accumulates one prompt's events and
measures its timings at the adapter (submission to first token, first token to the end).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ... import limits
from ...chat.thinking_budget import ALIASES as BUDGET_ALIASES
from ...chat.thinking_budget import raw_prompt_factories, requested_budget
from ...config import GenerationDefaults
from ...engine.dry import DEFAULT_STRING_BREAKERS, BreakerSequence, breakers_from_strings
from ...engine.loaded_model import LoadedModel
from ...errors import InvalidRequestError
from ...generation import (
    EngineEvent,
    Finished,
    GenerationRequest,
    PromptProgress,
    SamplingParams,
    TokenDelta,
    TokenLogprob,
)
from ...protocol.completion_fields import new_id
from ...protocol.sampling_fields import logit_bias_count
from ...protocol.timings import draft_fields, llama_timings
from ...protocol.types import INT32_MAX, Int
from ...structured.user_grammar import user_grammar_factories
from .probs import encode_with_probabilities
from .props_bodies import ParamsView, params_body

# llama-server's JSON-object prompt: {"prompt_string": ..., "multimodal_data": [...]}.
ObjectPrompt = dict[str, Any]
PromptItem = str | Int | list[str | Int] | ObjectPrompt
MAX_PROMPTS = 16


class NativeCompletionRequest(BaseModel):
    """``POST /completion`` (llama-server names; unknown fields are accepted and ignored)."""

    model_config = ConfigDict(strict=True, extra="allow")

    prompt: str | ObjectPrompt | list[PromptItem]
    n_predict: Int | None = Field(default=None, ge=-1)
    stream: bool = False
    temperature: float | None = None
    top_k: Int | None = None
    top_p: float | None = Field(default=None, ge=0.0, le=1.0)
    min_p: float | None = Field(default=None, ge=0.0, le=1.0)
    repeat_penalty: float | None = Field(default=None, ge=0.0)
    repeat_last_n: Int | None = Field(default=None, ge=-1, le=INT32_MAX)
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    dry_multiplier: float | None = Field(default=None, ge=0.0)
    dry_base: float | None = Field(default=None, ge=1.0)
    dry_allowed_length: Int | None = Field(default=None, ge=0)
    dry_penalty_last_n: Int | None = Field(default=None, ge=-1)
    dry_sequence_breakers: list[str] | None = None
    seed: Int | None = None
    stop: list[str] | str | None = None
    ignore_eos: bool | None = None
    cache_prompt: bool | None = None
    return_tokens: bool | None = None
    n_probs: Int | None = Field(default=None, ge=0)
    post_sampling_probs: bool | None = None
    n_cmpl: Int | None = Field(default=None, ge=1)
    logit_bias: list[list[Any]] | dict[str, Any] | None = None
    response_format: dict[str, Any] | None = None
    json_schema: Any = None
    grammar: Any = None
    p_less: bool | None = None
    # llama-server's stream extras: timings on every partial, prompt-progress events.
    timings_per_token: bool | None = None
    return_progress: bool | None = None
    # The thinking budget's three aliases (chat/thinking_budget.py); -1 = unlimited.
    thinking_budget_tokens: Int | None = None
    reasoning_budget_tokens: Int | None = None
    reasoning_budget: Int | None = None

    _logit_bias_count = field_validator("logit_bias", mode="before")(logit_bias_count)


# -- translation --------------------------------------------------------------------------

def _check_unsupported(request: NativeCompletionRequest) -> None:
    fmt = (request.response_format or {}).get("type", "text")
    if fmt != "text":
        raise InvalidRequestError(
            f"response_format type {fmt!r} is not supported on /completion; use "
            "/v1/chat/completions for JSON-schema constrained decoding.",
            param="response_format",
        )
    if request.n_cmpl is not None and request.n_cmpl > 1:
        raise InvalidRequestError("Only n_cmpl=1 is supported.", param="n_cmpl")
    problem = limits.stop_problem(request.stop)
    if problem:
        raise InvalidRequestError(f"{problem}.", param="stop")


def _sequence(items: list[str | int], model: LoadedModel) -> list[int]:
    """One prompt given as token ids, strings, or both mixed, in order."""
    ids: list[int] = []
    for item in items:
        if isinstance(item, str):
            ids.extend(model.encode(item))
            continue
        if not 0 <= item < model.vocab_size:
            raise InvalidRequestError(
                f"prompt token id {item} is out of vocabulary range "
                f"(vocab_size {model.vocab_size}).",
                param="prompt",
            )
        ids.append(item)
    return ids


def _object_prompt(item: Any) -> Any:
    """llama-server's ``{"prompt_string": s, "multimodal_data": [...]}`` as the string ``s``;
    media data is a 400 (this route reads text only, and ``/props`` says so)."""
    if not isinstance(item, dict):
        return item
    text = item.get("prompt_string")
    if not isinstance(text, str):
        raise InvalidRequestError("a prompt object needs a prompt_string string.",
                                  param="prompt")
    media = item.get("multimodal_data", [])
    if not isinstance(media, list):  # llama-server's README: an array of base64 strings
        raise InvalidRequestError("a prompt object's multimodal_data must be an array.",
                                  param="prompt")
    if media:
        raise InvalidRequestError("multimodal_data is not supported on /completion.",
                                  param="prompt")
    return text


def native_prompts(request: NativeCompletionRequest, model: LoadedModel) -> list[list[int]]:
    """Every prompt as token ids: a string (or a prompt object) or one id/mixed sequence is
    one prompt; a list whose items are strings, objects or lists is several."""
    prompt = _object_prompt(request.prompt)
    if isinstance(prompt, list):
        prompt = [_object_prompt(item) for item in prompt]
    if isinstance(prompt, str):
        return [model.encode(prompt) or model.empty_prompt_tokens()]
    if not prompt:
        raise InvalidRequestError("prompt must not be an empty list.", param="prompt")
    if any(isinstance(p, int) for p in prompt):
        if any(isinstance(p, list) for p in prompt):
            raise InvalidRequestError(
                "prompt mixes token ids with nested lists.", param="prompt"
            )
        return [_sequence(prompt, model)]
    if len(prompt) > MAX_PROMPTS:
        raise InvalidRequestError(f"at most {MAX_PROMPTS} prompts per request.", param="prompt")
    if any(isinstance(p, list) and not p for p in prompt):
        raise InvalidRequestError("a token-list prompt must not be empty.", param="prompt")
    return [
        _sequence([item] if isinstance(item, str) else list(item), model)
        or model.empty_prompt_tokens()
        for item in prompt
    ]


def _pick(value: Any, default: Any) -> Any:
    return default if value is None else value


def native_logit_bias(request: NativeCompletionRequest, model: LoadedModel
                      ) -> dict[int, float] | None:
    """llama-server's forms: ``[[id_or_text, bias|false], ...]`` or ``{"id_or_text": bias}``;
    ``false`` bans the token; a text key applies to each of its tokens."""
    raw = request.logit_bias
    if not raw:
        return None
    pairs = list(raw.items()) if isinstance(raw, dict) else raw
    out: dict[int, float] = {}
    for pair in pairs:
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise InvalidRequestError("logit_bias entries must be [token, bias] pairs.",
                                      param="logit_bias")
        key, bias = pair
        if bias is False:
            value = -1e9
        elif isinstance(bias, (int, float)) and not isinstance(bias, bool):
            value = float(bias)
        else:
            raise InvalidRequestError("a logit_bias value must be a number or false.",
                                      param="logit_bias")
        for token in _bias_tokens(key, model):
            out[token] = value
    return out


def _bias_tokens(key: Any, model: LoadedModel) -> list[int]:
    if isinstance(key, str) and key.lstrip("-").isdigit():
        key = int(key)
    if isinstance(key, str):
        return model.encode(key)
    if isinstance(key, int) and not isinstance(key, bool) and 0 <= key < model.vocab_size:
        return [key]
    raise InvalidRequestError(f"logit_bias token {key!r} is outside the vocabulary.",
                              param="logit_bias")


def native_sampling(request: NativeCompletionRequest, model: LoadedModel,
                    defaults: GenerationDefaults) -> SamplingParams:
    last_n = _pick(request.repeat_last_n, defaults.repeat_last_n)
    return SamplingParams(
        temperature=max(_pick(request.temperature, defaults.temperature), 0.0),
        top_p=_pick(request.top_p, defaults.top_p),
        top_k=max(_pick(request.top_k, defaults.top_k), 0),
        min_p=_pick(request.min_p, defaults.min_p),
        seed=_seed(request.seed, defaults.seed),
        repetition_penalty=_pick(request.repeat_penalty, defaults.repeat_penalty),
        repetition_context_size=model.context_size if last_n == -1 else last_n,
        presence_penalty=_pick(request.presence_penalty, defaults.presence_penalty),
        frequency_penalty=_pick(request.frequency_penalty, defaults.frequency_penalty),
        logit_bias=native_logit_bias(request, model),
        p_less=bool(request.p_less),
        cache_prompt=request.cache_prompt,  # false: read the prompt cold, as llama-server does
        **native_dry(request, model, defaults),
    )


def _seed(value: int | None, default: int | None) -> int | None:
    """``-1`` (or any negative seed) asks for a random seed, as in llama-server; larger seeds
    are folded into MLX's unsigned 64-bit seed space."""
    if value is None:
        return default
    return None if value < 0 else value % 2**64


# Breaker tables of recent breaker lists (LRU, keyed by tokenizer and strings), and each
# tokenizer's token texts, decoded once.
BREAKER_CACHE_ENTRIES = 64
_BREAKER_CACHE: OrderedDict[tuple[int, tuple[str, ...]], tuple[BreakerSequence, ...]] = \
    OrderedDict()
_PIECES: dict[int, list[tuple[int, str]]] = {}
_CACHE_LOCK = threading.Lock()


def _pieces(model: LoadedModel) -> list[tuple[int, str]]:
    key = id(model.tokenizer)
    if key not in _PIECES:
        vocab = sorted(model.tokenizer.get_vocab().values())
        _PIECES[key] = [(i, model.decode([i])) for i in vocab]
    return _PIECES[key]


def _string_breakers(strings: tuple[str, ...], model: LoadedModel) -> tuple[BreakerSequence, ...]:
    key = (id(model.tokenizer), strings)
    with _CACHE_LOCK:
        found = _BREAKER_CACHE.get(key)
        if found is not None:
            _BREAKER_CACHE.move_to_end(key)
            return found
    table = breakers_from_strings(strings, _pieces(model), model.encode)
    with _CACHE_LOCK:
        _BREAKER_CACHE[key] = table
        while len(_BREAKER_CACHE) > BREAKER_CACHE_ENTRIES:
            _BREAKER_CACHE.popitem(last=False)
    return table


def bounded_breakers(breakers: list[str] | None) -> tuple[str, ...]:
    """The request's string breakers (llama-server's defaults when absent): at most
    ``--max-dry-breakers`` of them (400 beyond), each cut to ``--dry-breaker-chars``
    characters as llama.cpp cuts its own to 40."""
    if breakers is None:
        return DEFAULT_STRING_BREAKERS
    bounds = limits.active()
    if len(breakers) > bounds.max_dry_breakers:
        raise InvalidRequestError(
            f"at most {bounds.max_dry_breakers} dry_sequence_breakers are accepted.",
            param="dry_sequence_breakers")
    return tuple(b[:bounds.dry_breaker_chars] for b in breakers)


def native_dry(request: NativeCompletionRequest, model: LoadedModel,
               defaults: GenerationDefaults) -> dict[str, Any]:
    """DRY in llama-server's terms (``dry_penalty_last_n``: -1 = the whole context, 0 = off;
    string breakers, default ``["\\n", ":", "\\"", "*"]``) as ``SamplingParams`` fields."""
    multiplier = _pick(request.dry_multiplier, defaults.dry_multiplier)
    last_n = request.dry_penalty_last_n
    window = defaults.dry_penalty_last_n if last_n is None else max(last_n, 0)
    if last_n == 0:
        multiplier = 0.0
    strings = bounded_breakers(request.dry_sequence_breakers)
    return {
        "dry_multiplier": multiplier,
        "dry_base": _pick(request.dry_base, defaults.dry_base),
        "dry_allowed_length": _pick(request.dry_allowed_length, defaults.dry_allowed_length),
        "dry_penalty_last_n": window,
        "dry_sequence_breakers": _string_breakers(strings, model) if multiplier > 0 else (),
    }


def n_predict_of(request: NativeCompletionRequest, model: LoadedModel,
                 defaults: GenerationDefaults) -> int:
    """``-1`` means "until the context is full"; absent means the server default."""
    n_predict = _pick(request.n_predict, defaults.n_predict)
    return model.context_size if n_predict < 0 else n_predict


def to_generation_requests(request: NativeCompletionRequest, model: LoadedModel,
                           defaults: GenerationDefaults,
                           prompts: list[list[int]] | None = None) -> list[GenerationRequest]:
    _check_unsupported(request)
    prompts = native_prompts(request, model) if prompts is None else prompts
    stop = (request.stop,) if isinstance(request.stop, str) else tuple(request.stop or ())
    budget = requested_budget({name: getattr(request, name) for name in BUDGET_ALIASES})
    constraint = user_grammar_factories(model, request.grammar, request.json_schema)
    request_id = new_id("cmpl-")
    return [
        GenerationRequest(
            prompt_tokens=tuple(tokens),
            max_tokens=n_predict_of(request, model, defaults),
            sampling=native_sampling(request, model, defaults),
            stop=stop,
            ignore_eos=bool(request.ignore_eos),
            logprobs=bool(request.n_probs),
            top_logprobs=min(request.n_probs or 0, model.vocab_size),
            post_sampling_probs=bool(request.post_sampling_probs),
            report_progress=bool(request.stream and request.return_progress),
            logits_processor_factories=raw_prompt_factories(model, budget, tokens) + constraint,
            request_id=request_id,
        )
        for tokens in prompts
    ]


# -- rendering ----------------------------------------------------------------------------

def stop_type_of(finished: Finished) -> str:
    if finished.reason == "length":
        return "limit"
    if finished.reason == "stop":
        return "word" if finished.stop_string is not None else "eos"
    return "none"


@dataclass
class NativeRun:
    """One prompt's generation as llama-server reports it, timed at the adapter."""

    index: int
    gen: GenerationRequest
    started: float = field(default_factory=time.perf_counter)
    first_token_at: float | None = None
    ended_at: float | None = None
    text: list[str] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    # The engine's log probabilities, kept for a non-streamed answer only (a stream sends
    # each with its chunk); rendered to JSON once, off the event loop (``encode_final``).
    keep_logprobs: bool = True
    logprobs: list[TokenLogprob] = field(default_factory=list)
    finished: Finished | None = None

    def feed(self, event: EngineEvent) -> None:
        now = time.perf_counter()
        if isinstance(event, TokenDelta):
            if event.token_ids and self.first_token_at is None:
                self.first_token_at = now
            self.text.append(event.text)
            self.tokens.extend(event.token_ids)
            if self.keep_logprobs and self.gen.logprobs:
                self.logprobs.extend(event.logprobs)
        else:
            self.finished = event
            self.ended_at = now

    def _partial(self, text: str, tokens: list[int]) -> dict[str, Any]:
        return {
            "index": self.index,
            "content": text,
            "tokens": tokens,
            "stop": False,
            "id_slot": 0,
            "tokens_predicted": len(self.tokens),
            "tokens_evaluated": len(self.gen.prompt_tokens),
        }

    def partial_json(self, event: TokenDelta, with_timings: bool = False) -> str:
        """One streamed partial as JSON, its ``completion_probabilities`` (when asked) built
        from cached pieces (``encode_with_probabilities``): with ``n_probs`` near the
        vocabulary a partial is hundreds of kB."""
        chunk = self._partial(event.text, list(event.token_ids))
        if with_timings:  # timings_per_token: the timings so far on every partial
            chunk["timings"] = self.timings_so_far()
        if not self.gen.logprobs:
            return encode_with_probabilities(chunk, None)
        return encode_with_probabilities(chunk, event.logprobs, self.gen.post_sampling_probs)

    def progress(self, event: PromptProgress) -> dict[str, Any]:
        """A ``return_progress`` partial (llama-server's ``prompt_progress``): the prompt's
        tokens, those taken from the prompt cache, those in the cache so far (cached ones
        included), and the milliseconds since the request was submitted."""
        chunk = self._partial("", [])
        chunk["prompt_progress"] = {
            "total": event.total, "cache": event.cached, "processed": event.processed,
            "time_ms": (time.perf_counter() - self.started) * 1e3}
        return chunk

    def timings_so_far(self) -> dict[str, Any]:
        now = time.perf_counter()
        first = self.first_token_at or now
        return llama_timings(len(self.gen.prompt_tokens), (first - self.started) * 1e3,
                             len(self.tokens), (now - first) * 1e3)

    def timings(self) -> dict[str, Any]:
        """Prompt time runs from submission to the first generated token (queue wait and
        prefill included); predicted time from there to the end."""
        assert self.finished is not None and self.ended_at is not None
        first = self.first_token_at or self.ended_at
        cached = self.finished.cached_tokens
        prompt_n = self.finished.prompt_tokens - cached
        predicted_n = self.finished.completion_tokens
        prompt_ms = (first - self.started) * 1e3
        predicted_ms = (self.ended_at - first) * 1e3
        timings = llama_timings(prompt_n, prompt_ms, predicted_n, predicted_ms, cache_n=cached)
        draft = self.finished.draft
        if draft is not None and draft.rounds > 0:  # a drafter ran: its four counters too
            timings.update(draft_fields(draft))
        return timings

    def final(self, model_name: str, prompt_text: str, settings: dict[str, Any], *,
              streamed: bool, return_tokens: bool) -> dict[str, Any]:
        assert self.finished is not None
        content = "".join(self.text)
        return {
            "index": self.index,
            "content": "" if streamed else content,
            "tokens": [] if streamed or not return_tokens else list(self.tokens),
            "id_slot": 0,
            "stop": True,
            "model": model_name,
            "tokens_predicted": self.finished.completion_tokens,
            "tokens_evaluated": self.finished.prompt_tokens,
            "generation_settings": settings,
            "prompt": prompt_text,
            "has_new_line": "\n" in content,
            "truncated": False,
            "stop_type": stop_type_of(self.finished),
            "stopping_word": self.finished.stop_string or "",
            "tokens_cached": self.finished.cached_tokens,
            "timings": self.timings(),
        }

    def probabilities(self, streamed: bool) -> list[TokenLogprob] | None:
        """What the final answer's ``completion_probabilities`` holds (None: no such key)."""
        return self.logprobs if self.gen.logprobs and not streamed else None


def check_logprob_entries(gens: Sequence[GenerationRequest], context_size: int) -> None:
    """400 when a non-streamed answer would hold more log probabilities than the limit:
    ``n_probs`` for each token a prompt may generate (``n_predict``, or what is left of the
    context)."""
    for gen in gens:
        room = max(0, context_size - len(gen.prompt_tokens))
        problem = limits.logprob_entries_problem(gen.top_logprobs, min(gen.max_tokens, room))
        if problem is not None:
            raise InvalidRequestError(problem + ".", param="n_probs")


def generation_settings(request: NativeCompletionRequest, gen: GenerationRequest,
                        model_name: str, n_ctx: int) -> dict[str, Any]:
    """The settings the request actually ran with (llama-server's ``generation_settings``: its
    ``params`` fields, with ``n_ctx`` and ``model`` as its README lists them)."""
    s = gen.sampling
    view = ParamsView(
        sampling=s, n_predict=gen.max_tokens, repeat_last_n=s.repetition_context_size,
        dry_penalty_last_n=_pick(request.dry_penalty_last_n, s.dry_penalty_last_n or -1),
        stop=list(gen.stop), ignore_eos=gen.ignore_eos, stream=request.stream,
        n_probs=gen.top_logprobs, grammar=request.grammar if isinstance(request.grammar, str)
        else "", timings_per_token=bool(request.timings_per_token),
        post_sampling_probs=gen.post_sampling_probs,
        dry_sequence_breakers=list(request.dry_sequence_breakers
                                   if request.dry_sequence_breakers is not None
                                   else DEFAULT_STRING_BREAKERS))
    return {"n_ctx": n_ctx, "model": model_name, **params_body(view),
            "cache_prompt": _pick(request.cache_prompt, True)}
