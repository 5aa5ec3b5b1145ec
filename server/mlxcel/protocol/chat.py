"""OpenAI Chat Completions: request model, translation to ``GenerationRequest``, rendering.

``ChatChunkEncoder`` is the stream's state machine: role chunk first, content deltas, exactly
one finish chunk, then (when asked) the usage chunk with ``choices: []``; the adapter adds
``data: [DONE]``.
"""

from __future__ import annotations

import time
import uuid
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..chat.template import render_chat_prompt
from ..config import GenerationDefaults
from ..engine.model import LoadedModel
from ..engine.request import Finished, GenerationRequest, TokenDelta
from ..errors import InvalidRequestError
from .logprobs import render_logprobs
from .sampling_fields import OpenAISamplingFields
from .types import Int


class ContentPart(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    type: str
    text: str | None = None


class ChatMessage(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class ChatCompletionRequest(OpenAISamplingFields):
    messages: list[ChatMessage] = Field(min_length=1)
    max_completion_tokens: Int | None = Field(default=None, ge=1)
    logprobs: bool | None = None
    top_logprobs: Int | None = Field(default=None, ge=0, le=20)
    tools: list[dict[str, Any]] | None = None
    tool_choice: Any = None
    response_format: dict[str, Any] | None = None
    chat_template_kwargs: dict[str, Any] | None = None


def _flatten_content(index: int, message: ChatMessage) -> str | None:
    if message.content is None or isinstance(message.content, str):
        return message.content
    texts: list[str] = []
    for part in message.content:
        if part.type == "text" and part.text is not None:
            texts.append(part.text)
        elif part.type in ("image_url", "input_image", "video_url", "input_audio"):
            raise InvalidRequestError(
                f"messages[{index}] has a {part.type} part, but the loaded model is text-only.",
                param=f"messages.{index}.content",
            )
        else:
            raise InvalidRequestError(
                f"messages[{index}] has an unsupported content part type {part.type!r}.",
                param=f"messages.{index}.content",
            )
    return "\n".join(texts)


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
        for key in ("name", "tool_calls", "tool_call_id"):
            value = getattr(msg, key)
            if value is not None:
                item[key] = value
        extra = msg.model_extra or {}
        if "reasoning_content" in extra:
            item["reasoning_content"] = extra["reasoning_content"]
        out.append(item)
    return out


def _check_unsupported(request: ChatCompletionRequest) -> None:
    request.check_n()
    fmt = (request.response_format or {}).get("type", "text")
    if fmt != "text":
        raise InvalidRequestError(
            f"response_format type {fmt!r} is not supported yet.", param="response_format"
        )


def to_generation_request(
    request: ChatCompletionRequest, model: LoadedModel, defaults: GenerationDefaults
) -> GenerationRequest:
    _check_unsupported(request)
    prompt = render_chat_prompt(
        model,
        template_messages(request),
        tools=request.tools,
        template_kwargs=request.chat_template_kwargs,
    )
    limit = request.max_completion_tokens or request.max_tokens or defaults.n_predict
    sampling = request.sampling(defaults)
    return GenerationRequest(
        prompt_tokens=tuple(prompt),
        max_tokens=limit,
        sampling=sampling,
        stop=request.stop_strings(),
        logprobs=bool(request.logprobs),
        top_logprobs=(request.top_logprobs or 0) if request.logprobs else 0,
        ignore_eos=bool(request.ignore_eos),
        request_id=new_id("chatcmpl-"),
    )


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def usage_of(finished: Finished) -> dict[str, Any]:
    return {
        "prompt_tokens": finished.prompt_tokens,
        "completion_tokens": finished.completion_tokens,
        "total_tokens": finished.prompt_tokens + finished.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": finished.cached_tokens},
    }


def finish_reason_of(finished: Finished) -> str:
    return "length" if finished.reason == "length" else "stop"


class ChatChunkEncoder:
    """Builds the chunks of one streamed chat completion, in order."""

    def __init__(self, request_id: str, model_name: str, fingerprint: str) -> None:
        self._base = {
            "id": request_id,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model_name,
            "system_fingerprint": fingerprint,
        }

    def _chunk(self, delta: dict[str, Any], finish: str | None, logprobs: Any = None) -> dict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": logprobs}
        return {**self._base, "choices": [choice]}

    def role(self) -> dict[str, Any]:
        return self._chunk({"role": "assistant"}, None)

    def delta(self, event: TokenDelta, want_logprobs: bool) -> dict[str, Any]:
        logprobs = render_logprobs(event.logprobs) if want_logprobs else None
        return self._chunk({"content": event.text}, None, logprobs)

    def finish(self, finished: Finished) -> dict[str, Any]:
        return self._chunk({}, finish_reason_of(finished))

    def usage(self, finished: Finished) -> dict[str, Any]:
        return {**self._base, "choices": [], "usage": usage_of(finished)}


def completion_body(
    request_id: str,
    model_name: str,
    fingerprint: str,
    text: str,
    finished: Finished,
    logprobs: list[dict[str, Any]] | None,
) -> dict[str, Any]:
    return {
        "id": request_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model_name,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": finish_reason_of(finished),
                "logprobs": None if logprobs is None else {"content": logprobs, "refusal": None},
            }
        ],
        "usage": usage_of(finished),
    }
