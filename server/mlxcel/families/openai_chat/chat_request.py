"""OpenAI Chat Completions: the request model and its translation into the family-neutral
chat turn (``chat/turn.py`` decides what the turn means) and a ``GenerationRequest``, plus the
``ChatSetup`` that splits the output (rendering lives in ``render.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ...chat.continuation import continued_field
from ...chat.multimodal import image_part
from ...chat.output import OutputSetup
from ...chat.stream_filter import ChatOutputParser
from ...chat.template_kwargs import request_kwargs
from ...chat.turn import TurnRequest, TurnSettings, build, check
from ...config import GenerationDefaults
from ...engine.loaded_model import LoadedModel
from ...errors import InvalidRequestError
from ...generation import Finished, GenerationRequest
from ...protocol.completion_fields import new_id
from ...protocol.field_limits import Identifier, Metadata, SafetyIdentifier
from ...protocol.sampling_fields import OpenAISamplingFields
from ...protocol.types import Int, Omittable

MEDIA_PART_TYPES = ("image_url", "input_image", "video_url", "input_audio")


class ContentPart(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    type: str
    text: Omittable[str] = None  # media parts have none; a text part's is a string


class ChatFunctionCall(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    name: str
    arguments: str  # a JSON text, as OpenAI's ChatCompletionMessageToolCall has it


class ChatToolCall(BaseModel):
    """An assistant message's tool call, as OpenAI's spec requires it (id, type, function)."""

    model_config = ConfigDict(strict=True, extra="allow")
    id: str
    type: Literal["function"]
    function: ChatFunctionCall


class ChatMessage(BaseModel):
    """One message. OpenAI's spec types ``name``, ``tool_calls`` and ``tool_call_id`` without
    null and gives a content array at least one part; ``content`` itself may be null (an
    assistant message with tool calls, checked in ``template_messages``)."""

    model_config = ConfigDict(strict=True, extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: Omittable[str] = None
    tool_calls: Omittable[list[ChatToolCall]] = None
    tool_call_id: Omittable[str] = None

    @field_validator("content")
    @classmethod
    def _parts(cls, value: str | list[ContentPart] | None) -> str | list[ContentPart] | None:
        if isinstance(value, list) and not value:
            raise ValueError("a content array needs at least one part")
        return value


class ChatCompletionRequest(OpenAISamplingFields):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: Int | None = Field(default=None, ge=1)
    # OpenAI's boolean (with top_logprobs) or mlx-lm's integer: that many top tokens, 1..10.
    logprobs: bool | Int | None = None
    top_logprobs: Int | None = Field(default=None, ge=0, le=20)
    # mlx-lm's prompt prefixes for a model without a chat template.
    role_mapping: dict[str, str] | None = None
    user: Omittable[Identifier] = None
    # Stored-completion fields OpenAI documents (bounds: protocol/field_limits.py); unused.
    metadata: Metadata | None = None
    prompt_cache_key: Identifier | None = None
    safety_identifier: SafetyIdentifier | None = None
    # OpenAI types these without null; their shapes are checked where they are read.
    tools: Omittable[Any] = None
    tool_choice: Omittable[Any] = None
    response_format: Omittable[dict[str, Any]] = None
    chat_template_kwargs: Omittable[Any] = None
    # llama-server's flags on its OpenAI routes (its README: booleans).
    add_generation_prompt: bool | None = None
    return_progress: bool | None = None
    timings_per_token: bool | None = None

    @field_validator("logprobs")
    @classmethod
    def _logprobs_range(cls, value: bool | int | None) -> bool | int | None:
        if not isinstance(value, bool) and isinstance(value, int) and not 1 <= value <= 10:
            raise ValueError("logprobs as an integer (top tokens) must be between 1 and 10")
        return value

    def wants_logprobs(self) -> bool:
        return bool(self.logprobs)

    def top_logprobs_count(self) -> int:
        """mlx-lm's integer ``logprobs`` is the count itself (``top_logprobs`` then ignored);
        OpenAI's ``logprobs: true`` takes ``top_logprobs`` (default 0)."""
        if isinstance(self.logprobs, bool) or self.logprobs is None:
            return (self.top_logprobs or 0) if self.logprobs else 0
        return self.logprobs


def _media_part(part: ContentPart, param: str) -> dict[str, Any]:
    """A chat media part as the neutral part chat/multimodal.py reads."""
    extra = part.model_extra or {}
    if part.type in ("image_url", "input_image"):
        value = extra.get(part.type)
        url = value.get("url") if isinstance(value, dict) else value
        return image_part(url, param)
    if part.type == "video_url":
        value = extra.get("video_url")
        video = value if isinstance(value, dict) else {"url": value}
        return {"type": "video", "param": param, "url": video.get("url"),
                "fps": video.get("fps")}
    return {"type": "audio", "param": param}


def _flatten_content(index: int, message: ChatMessage) -> str | list[dict[str, Any]] | None:
    """Text parts joined into one string; with media parts, the neutral parts list."""
    if message.content is None or isinstance(message.content, str):
        return message.content
    parts: list[dict[str, Any]] = []
    for j, part in enumerate(message.content):
        if part.type == "text" and part.text is not None:
            parts.append({"type": "text", "text": part.text})
        elif part.type in MEDIA_PART_TYPES:
            parts.append(_media_part(part, f"messages.{index}.content.{j}"))
        else:
            raise InvalidRequestError(
                f"messages[{index}] has an unsupported content part type {part.type!r}.",
                param=f"messages.{index}.content",
            )
    if any(p["type"] != "text" for p in parts):
        return parts
    return "\n".join(p["text"] for p in parts)


def template_messages(request: ChatCompletionRequest) -> list[dict[str, Any]]:
    """Messages as plain dicts for the template; the request object itself is not modified."""
    out: list[dict[str, Any]] = []
    for i, msg in enumerate(request.messages):
        content = _flatten_content(i, msg)
        if content is None and not (msg.role == "assistant" and msg.tool_calls):
            raise InvalidRequestError(
                f"messages[{i}].content is required for role {msg.role!r}.",
                param=f"messages.{i}.content",
            )
        item: dict[str, Any] = {
            "role": "system" if msg.role == "developer" else msg.role,
            "content": content or "",
        }
        for key in ("name", "tool_call_id"):
            value = getattr(msg, key)
            if value is not None:
                item[key] = value
        if msg.tool_calls is not None:
            item["tool_calls"] = [call.model_dump(exclude_unset=True) for call in msg.tool_calls]
        extra = msg.model_extra or {}
        if "reasoning_content" in extra:
            item["reasoning_content"] = extra["reasoning_content"]
        out.append(item)
    return out


@dataclass(frozen=True)
class ChatSetup:
    """Everything a chat generation needs beyond the ``GenerationRequest``: how to split the
    output into answer, reasoning and tool calls."""

    generation: GenerationRequest
    output: OutputSetup
    forced: bool = False  # tool_choice required or named

    @property
    def starts_in_reasoning(self) -> bool:
        return self.output.starts_in_reasoning

    def new_parser(self) -> ChatOutputParser:
        return self.output.new_parser(self.generation.request_id)


def _own_template_kwargs(request: ChatCompletionRequest) -> dict[str, Any]:
    # extra_body is a declared field (cache_prompt reads it too), so it is not in model_extra.
    extra = {**(request.model_extra or {}), "extra_body": request.extra_body}
    return request_kwargs(request.chat_template_kwargs, extra)


def _continued(request: ChatCompletionRequest) -> str | None:
    return continued_field((request.model_extra or {}).get("continue_final_message"),
                           request.add_generation_prompt)


def chat_turn(request: ChatCompletionRequest, defaults: GenerationDefaults) -> TurnRequest:
    """A chat body as the family-neutral turn (``chat/turn.py``)."""
    return TurnRequest(
        messages=template_messages(request),
        max_tokens=request.max_completion_tokens or request.max_tokens or defaults.n_predict,
        tools=request.tools,
        tool_choice=request.tool_choice,
        response_format=request.response_format,
        grammar_fields=request.model_extra,
        template_kwargs=_own_template_kwargs(request),
        continue_final=_continued(request),
        thinking_budget=request.thinking_budget(),
        role_mapping=request.role_mapping,
    )


def check_chat_request(request: ChatCompletionRequest, model: LoadedModel,
                       defaults: GenerationDefaults, settings: TurnSettings | None = None
                       ) -> None:
    """Every 400 ``to_chat_setup`` gives a body, without rendering its prompt: for a route that
    reads a chat body and generates nothing (``/apply-template``, as llama-server parses it
    with its chat route's parser; ``n`` is checked against the slots by the route)."""
    check(chat_turn(request, defaults), model, settings or TurnSettings())
    request.sampling(defaults)


def to_chat_setup(
    request: ChatCompletionRequest,
    model: LoadedModel,
    defaults: GenerationDefaults,
    settings: TurnSettings | None = None,
) -> ChatSetup:
    turn_request = chat_turn(request, defaults)
    turn = build(turn_request, model, settings or TurnSettings())
    generation = GenerationRequest(
        prompt_tokens=tuple(turn.prompt.tokens),
        max_tokens=turn_request.max_tokens,
        sampling=request.sampling(defaults),
        stop=request.stop_strings(),
        logprobs=request.wants_logprobs(),
        top_logprobs=request.top_logprobs_count(),
        ignore_eos=bool(request.ignore_eos),
        logits_processor_factories=turn.constraints,
        request_id=new_id("chatcmpl-"),
        vision=turn.prompt.vision,
    )
    return ChatSetup(generation, turn.output, turn.forced)


def usage_of(finished: Finished, reasoning_tokens: int = 0) -> dict[str, Any]:
    """Chat usage with the details OpenAI's API always sends (zeros where nothing applies:
    no audio, no predicted outputs)."""
    return {
        "prompt_tokens": finished.prompt_tokens,
        "completion_tokens": finished.completion_tokens,
        "total_tokens": finished.prompt_tokens + finished.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": finished.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": min(reasoning_tokens, finished.completion_tokens),
            "audio_tokens": 0, "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0},
    }
